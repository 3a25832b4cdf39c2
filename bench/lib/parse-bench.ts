/**
 * A peer in the benchmark (issue 20, item 6): the gateway beside Parse Server 9.10, both serving
 * the same Person data set, measured in the same run on the same machine.
 *
 * Pairs (`--parse-stores`):
 *   mongodb   the gateway on one FerretDB and Parse Server (its MongoDB adapter) on another
 *             FerretDB of the same binary (scripts/ferretdb.ts, SQLite backend);
 *   embedded  the gateway's embedded store (SQLite in-process) and Parse Server on PostgreSQL
 *             (a throw-away cluster from bench/lib/postgres.ts, when PostgreSQL is installed).
 *
 * Parse runs as bench/parse/parse-child.cjs from its own package folder (bench/parse, installed
 * here with `npm ci` on first use; not a dependency of the gateway). On FerretDB it skips exactly
 * the index creations FerretDB rejects (see that file); the skipped list is printed and reported.
 *
 * The same objects on both sides (bench/lib/dataset.ts): Person i is, on the gateway,
 * personBody(i) (spec.name, labels team and tier; indexes on spec.name and on the labels) and, on
 * Parse, class Person with objectId = metadata.name (allowCustomObjectId) and the fields name,
 * age, gender, team, tier, with indexes name_1 and team_1 created through the schema API.
 *
 * For each size (ascending, grown in place):
 *   1. seed both sides up to the size over HTTP, single creates, `concurrency` clients (measured:
 *      "seeding (sustained single creates)");
 *   2. check that both answer the list queries with the same totals and the same page, and the
 *      same object for a get;
 *   3. `rounds` interleaved rounds (the side that goes first alternates) of get by name, GraphQL
 *      get and the indexed list (two equality terms, sort, page of 20 plus total count), then
 *      `rounds` rounds of create (`creates` per run and side), whose objects are deleted again before the next size
 *      (not measured) so every size holds exactly its objects.
 *   Issues 31 and 32 add two GraphQL connection scenarios (checked to answer the same nodes on
 *   both sides first): a page of 20 Persons with one indexed equality filter (gateway `where`
 *   on spec.name, Parse `where: { name: { equalTo } }`), and a page of 20 deals with each deal's
 *   contact resolved in the same query (gateway x-svc-ref `contactPerson`, Parse Pointer).
 *   BENCH_PARSE_SCENARIOS picks scenarios.
 * Requests are those of an administrator: Basic auth on the gateway, the master key on Parse.
 * Per run: throughput, latency, failures (any status other than 200, 201 for creates), and the
 * server CPU per request from /proc/<pid>/stat of the server process and of its database
 * process(es) (FerretDB; PostgreSQL's postmaster and its backends). The ratio reported is the
 * median over rounds of gateway req/s ÷ Parse req/s of the same round.
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { startFerretdb } from '../../scripts/ferretdb.js';
import { BenchChild } from './children.js';
import { COLLECTION_PATH, gqlGetBody, LIST_QUERIES, listPath, NAMES, objectIndexes, objectName, personBody, teamOf, type ListQuery } from './dataset.js';
import type { GatewayChildConfig } from './gateway-child.js';
import { HttpClient, median, percentile, runLoad, type RequestSpec } from './load.js';
import { startPostgres } from './postgres.js';

const benchDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const PARSE_DIR = join(benchDir, 'parse');
const PARSE_VERSION = (JSON.parse(readFileSync(join(PARSE_DIR, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }).dependencies['parse-server']!;

export type PeerPair = 'mongodb' | 'embedded';

/**
 * Issues 31 and 32 (GraphQL connections and pointers): DEALS deals refer to the first CONTACTS
 * people. On the gateway a crm Deal (plugins/crm) whose spec.contact names a crm Person
 * (resolved as spec.contactPerson); on Parse a Deal whose `contact` is a Pointer to the Person of
 * the same objectId (resolved in the same query). Deal i: name deal-<i>, title, amount 10·i
 * (indexed on both sides, distinct, so both order the same). Seeded once, before the first size.
 */
const DEALS = 200;
const CONTACTS = 100;
const DEAL_PAGE = 20;
/** The pointer pages rotate over windows of the amount index (amount ≥ 10·k·DEAL_PAGE), each page full. */
const DEAL_WINDOWS = DEALS / DEAL_PAGE - 1;
const dealWindow = (k: number) => 10 * DEAL_PAGE * (k % DEAL_WINDOWS);
const dealName = (i: number) => `deal-${String(i).padStart(6, '0')}`;
const DEALS_PATH = '/apis/crm.example.net/v1/deals';
const CRM_PEOPLE_PATH = '/apis/crm.example.net/v1/people';

export interface PeerOptions {
  sizes: number[];
  pairs: PeerPair[];
  concurrency: number;
  rounds: number;
  /** Maximum measured requests per run (lowered to fit maxSeconds). */
  requests: number;
  warmup: number;
  maxSeconds: number;
  minRequests: number;
  /** Creates per run and side in the create scenario. */
  creates: number;
  /** Scenarios to run (default all): get, gql-get, list, gql-connection, gql-pointer, create. */
  scenarios?: string[];
  pageSize: number;
  pluginsDir: string;
  adminPassword: string;
  /** Registers a cleanup (run by bench/run.ts on exit, errors and signals). */
  onCleanup: (f: () => Promise<void>) => void;
}

type ScenarioId = 'create' | 'get' | 'gql-get' | 'list' | 'gql-connection' | 'gql-pointer';
const SCENARIOS: { id: ScenarioId; label: string }[] = [
  { id: 'get', label: 'get by name' },
  { id: 'gql-get', label: 'GraphQL get' },
  { id: 'list', label: 'indexed list (2 equality terms, sort, page of 20 + total)' },
  { id: 'create', label: 'create' },
  { id: 'gql-connection', label: 'GraphQL connection, page of 20, 1 indexed equality filter (issue 31: ≥ 3× on embedded)' },
  { id: 'gql-pointer', label: `GraphQL connection of ${DEAL_PAGE} deals, each with its contact resolved (issue 32: ≥ 2× on embedded)` },
];

interface Run {
  requests: number;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  firstError?: string;
  /** Server CPU ms per request: the server process, its database process(es). */
  cpuServer: number;
  cpuDb: number;
}

interface SideRuns {
  gateway: Run[];
  parse: Run[];
}

export interface PeerSize {
  size: number;
  matches: number;
  seed: { gateway: Run; parse: Run };
  runs: Partial<Record<ScenarioId, SideRuns>>;
}

export interface PeerResult {
  pair: PeerPair;
  label: string;
  notes: string[];
  sizes: PeerSize[];
}

// ---------------------------------------------------------------------------------------------
// CPU time from /proc

const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** utime + stime (+ cutime + cstime: reaped children) in ms, and the parent pid. */
function procCpu(pid: number): { ms: number; ppid: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields after the command: state(3) ppid(4) … utime(14) stime(15) cutime(16) cstime(17).
    const ticks = Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
    return { ms: (ticks * 1000) / CLK_TCK, ppid: Number(f[1]) };
  } catch {
    return undefined;
  }
}

/** CPU ms of a process and, with `withChildren`, of every live process whose parent it is. */
function cpuMs(pid: number, withChildren = false): number {
  let total = procCpu(pid)?.ms ?? 0;
  if (withChildren) {
    for (const d of readdirSync('/proc')) {
      if (!/^\d+$/.test(d)) continue;
      const p = procCpu(Number(d));
      if (p && p.ppid === pid) total += p.ms;
    }
  }
  return total;
}

/** The pid of the FerretDB listening on `port` (found by its command line). */
function ferretdbPid(port: number): number {
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const cmd = readFileSync(`/proc/${d}/cmdline`, 'utf8');
      if (cmd.includes(`--listen-addr=127.0.0.1:${port}\0`)) return Number(d);
    } catch {
      // gone
    }
  }
  throw new Error(`no FerretDB process listens on port ${port}`);
}

// ---------------------------------------------------------------------------------------------
// The two sides

interface Side {
  name: 'gateway' | 'parse';
  client: HttpClient;
  headers: Record<string, string>;
  serverPid: number;
  /** CPU ms so far of the database process(es). */
  dbCpu: () => number;
  create: (i: number, name: string) => RequestSpec;
  remove: (name: string) => RequestSpec;
  get: (name: string) => RequestSpec;
  gqlGet: (name: string) => RequestSpec;
  list: (q: ListQuery) => RequestSpec;
  /** Total and names on the page of a list answer. */
  readList: (body: unknown) => { total: number; names: string[] };
  /** GraphQL connection page of `pageSize` with one indexed equality filter (spec.name / name). */
  gqlConnection: (q: ListQuery) => RequestSpec;
  /** GraphQL connection of DEAL_PAGE deals by amount from window k, each with its contact resolved. */
  gqlPointer: (k: number) => RequestSpec;
  /** Names of the nodes of a connection answer, and of their resolved contacts (pointer pages). */
  readConnection: (body: unknown) => { names: string[]; contacts: (string | undefined)[] };
  /** Creates the crm people (gateway) and the deals referring to them. */
  seedDeals: (contacts: number) => RequestSpec[];
}

type Edges = { edges: { node: Record<string, unknown> }[] };
const gql = (query: string, variables?: Record<string, unknown>): RequestSpec => ({ method: 'POST', path: '/graphql', body: JSON.stringify({ query, variables }) });
const PERSON_CONNECTION = 'peopleExampleCom_v1alpha1_personsConnection';
const DEAL_CONNECTION = 'crmExampleNet_v1_dealsConnection';
const gwConnection = (first: number) =>
  `query C($n: String!) { ${PERSON_CONNECTION}(first: ${first}, where: { spec: { name: { eq: $n } } }, orderBy: [SPEC_NAME_ASC]) { ` +
  'edges { cursor node { metadata { name } spec { name age gender } } } pageInfo { hasNextPage endCursor } } }';
const GW_POINTER =
  `query D($min: Float!) { ${DEAL_CONNECTION}(first: ${DEAL_PAGE}, where: { spec: { amount: { gte: $min } } }, orderBy: [SPEC_AMOUNT_ASC]) { ` +
  'edges { cursor node { metadata { name } spec { title amount contactPerson { metadata { name } spec { email } } } } } pageInfo { hasNextPage endCursor } } }';
const parseConnection = (first: number) =>
  `query C($n: String!) { people(first: ${first}, where: { name: { equalTo: $n } }, order: [name_ASC, objectId_ASC]) { ` +
  'edges { cursor node { objectId name age gender } } pageInfo { hasNextPage endCursor } } }';
const PARSE_POINTER =
  `query D($min: Float!) { deals(first: ${DEAL_PAGE}, where: { amount: { greaterThanOrEqualTo: $min } }, order: [amount_ASC]) { ` +
  'edges { cursor node { objectId title amount contact { objectId name } } } pageInfo { hasNextPage endCursor } } }';

/** The one connection field of a GraphQL answer (throws on errors). */
function connectionOf(body: unknown): Edges {
  const b = body as { data?: Record<string, Edges | null>; errors?: unknown };
  const c = b.data && Object.values(b.data)[0];
  if (b.errors || !c) throw new Error(`GraphQL connection failed: ${JSON.stringify(b).slice(0, 300)}`);
  return c;
}

function gatewaySide(child: BenchChild, adminPassword: string, dbCpu: () => number, pageSize: number): Side {
  const lo = { page: 1, pageSize };
  return {
    name: 'gateway',
    client: new HttpClient(child.url, 64),
    headers: { authorization: `Basic ${Buffer.from(`admin:${adminPassword}`).toString('base64')}` },
    serverPid: child.pid,
    dbCpu,
    create: (i, name) => {
      const body = personBody(i) as { metadata: { name: string }; spec: { name: string } };
      body.metadata.name = name;
      if (name.startsWith(CREATED)) body.spec.name = `${CREATED}${body.spec.name}`;
      return { method: 'POST', path: COLLECTION_PATH, body: JSON.stringify(body) };
    },
    remove: (name) => ({ method: 'DELETE', path: `${COLLECTION_PATH}/${name}` }),
    get: (name) => ({ method: 'GET', path: `${COLLECTION_PATH}/${name}` }),
    gqlGet: (name) => ({ method: 'POST', path: '/graphql', body: gqlGetBody(name) }),
    list: (q) => ({ method: 'GET', path: listPath(q, lo) }),
    readList: (b) => {
      const l = b as { total: number; items: { metadata: { name: string } }[] };
      return { total: l.total, names: l.items.map((o) => o.metadata.name) };
    },
    gqlConnection: (q) => gql(gwConnection(pageSize), { n: q.name }),
    gqlPointer: (k) => gql(GW_POINTER, { min: dealWindow(k) }),
    readConnection: (b) => {
      const nodes = connectionOf(b).edges.map((e) => e.node as { metadata: { name: string }; spec: { contactPerson?: { metadata: { name: string } } | null } });
      return { names: nodes.map((n) => n.metadata.name), contacts: nodes.map((n) => n.spec.contactPerson?.metadata.name) };
    },
    seedDeals: (contacts) => [
      ...Array.from({ length: contacts }, (_, j): RequestSpec => ({
        method: 'POST',
        path: CRM_PEOPLE_PATH,
        body: JSON.stringify({ apiVersion: 'crm.example.net/v1', kind: 'Person', metadata: { name: objectName(j) }, spec: { email: `p${j}@example.net` } }),
      })),
      ...Array.from({ length: DEALS }, (_, i): RequestSpec => ({
        method: 'POST',
        path: DEALS_PATH,
        body: JSON.stringify({
          apiVersion: 'crm.example.net/v1',
          kind: 'Deal',
          metadata: { name: dealName(i) },
          spec: { title: `Deal ${i}`, amount: 10 * i, contact: objectName(i % contacts) },
        }),
      })),
    ],
  };
}

const PARSE_GQL_GET = 'query Get($id: ID!) { person(id: $id) { objectId name age gender team tier createdAt updatedAt } }';

/**
 * Prefix of the objects of the create scenario (metadata.name and spec.name): they never match
 * the measured list queries, so a leftover cannot change a total.
 */
const CREATED = 'created-';

function parseBody(i: number, objectId: string): Record<string, unknown> {
  const name = NAMES[i % NAMES.length]!;
  return { objectId, name: objectId.startsWith(CREATED) ? `${CREATED}${name}` : name, age: i % 90, gender: i % 2 ? 'FEMALE' : 'MALE', team: teamOf(i), tier: `tier-${i % 3}` };
}

function parseSide(child: BenchChild, appId: string, masterKey: string, dbCpu: () => number, pageSize: number): Side {
  return {
    name: 'parse',
    client: new HttpClient(child.url, 64),
    headers: { 'x-parse-application-id': appId, 'x-parse-master-key': masterKey },
    serverPid: child.pid,
    dbCpu,
    create: (i, name) => ({ method: 'POST', path: '/parse/classes/Person', body: JSON.stringify(parseBody(i, name)) }),
    remove: (name) => ({ method: 'DELETE', path: `/parse/classes/Person/${name}` }),
    get: (name) => ({ method: 'GET', path: `/parse/classes/Person/${name}` }),
    gqlGet: (name) => ({ method: 'POST', path: '/graphql', body: JSON.stringify({ query: PARSE_GQL_GET, variables: { id: name } }) }),
    list: (q) => {
      const p = new URLSearchParams({
        where: JSON.stringify({ name: q.name, team: q.team }),
        order: 'name,objectId',
        limit: String(pageSize),
        skip: '0',
        count: '1',
      });
      return { method: 'GET', path: `/parse/classes/Person?${p.toString()}` };
    },
    readList: (b) => {
      const l = b as { count: number; results: { objectId: string }[] };
      return { total: l.count, names: l.results.map((o) => o.objectId) };
    },
    gqlConnection: (q) => gql(parseConnection(pageSize), { n: q.name }),
    gqlPointer: (k) => gql(PARSE_POINTER, { min: dealWindow(k) }),
    readConnection: (b) => {
      const nodes = connectionOf(b).edges.map((e) => e.node as { objectId: string; contact?: { objectId: string } | null });
      return { names: nodes.map((n) => n.objectId), contacts: nodes.map((n) => n.contact?.objectId) };
    },
    seedDeals: (contacts) =>
      Array.from({ length: DEALS }, (_, i): RequestSpec => ({
        method: 'POST',
        path: '/parse/classes/Deal',
        body: JSON.stringify({
          objectId: dealName(i),
          title: `Deal ${i}`,
          amount: 10 * i,
          contact: { __type: 'Pointer', className: 'Person', objectId: objectName(i % contacts) },
        }),
      })),
  };
}

/** Parse class Person with the same indexes as the gateway's model (name; team; the sort is on name). */
async function createParseClass(side: Side): Promise<void> {
  await side.client.json(
    {
      method: 'POST',
      path: '/parse/schemas/Person',
      body: JSON.stringify({
        className: 'Person',
        fields: { name: { type: 'String' }, age: { type: 'Number' }, gender: { type: 'String' }, team: { type: 'String' }, tier: { type: 'String' } },
        indexes: { name_1: { name: 1 }, team_1: { team: 1 } },
      }),
    },
    { ...side.headers },
  );
  await side.client.json(
    {
      method: 'POST',
      path: '/parse/schemas/Deal',
      body: JSON.stringify({
        className: 'Deal',
        fields: { title: { type: 'String' }, amount: { type: 'Number' }, contact: { type: 'Pointer', targetClass: 'Person' } },
        indexes: { amount_1: { amount: 1 } },
      }),
    },
    { ...side.headers },
  );
}

/** Seeds the deals (and the gateway's crm people) on one side; every create must answer 201. */
async function seedDeals(side: Side, contacts: number, concurrency: number): Promise<void> {
  const specs = side.seedDeals(contacts);
  const r = await runLoad(side.client, (i) => specs[i]!, { requests: specs.length, concurrency, headers: side.headers, okStatus: 201 });
  if (r.errors) throw new Error(`${side.name}: seeding deals: ${r.errors} failed (${r.firstError})`);
}

/** Both sides answer the connection scenarios with the same nodes (and the same resolved contacts). */
async function verifyConnections(gw: Side, parse: Side): Promise<void> {
  const read = async (side: Side, spec: RequestSpec) => side.readConnection(await side.client.json(spec, side.headers));
  let found = 0;
  for (const q of LIST_QUERIES) {
    const a = await read(gw, gw.gqlConnection(q));
    const b = await read(parse, parse.gqlConnection(q));
    if (a.names.join(',') !== b.names.join(',')) {
      throw new Error(`gateway and Parse connections disagree on ${q.name}: ${a.names.join(',')} vs ${b.names.join(',')}`);
    }
    found += a.names.length;
  }
  if (found === 0) throw new Error('the connection queries match nothing on either side');
  for (let k = 0; k < DEAL_WINDOWS; k++) {
    const a = await read(gw, gw.gqlPointer(k));
    const b = await read(parse, parse.gqlPointer(k));
    if (a.names.length !== DEAL_PAGE || a.names.join(',') !== b.names.join(',') || a.contacts.join(',') !== b.contacts.join(',') || a.contacts.some((c) => !c)) {
      throw new Error(`gateway and Parse deal pages disagree (window ${k}): ${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Measuring

async function measure(
  side: Side,
  make: (i: number) => RequestSpec,
  requests: number,
  concurrency: number,
  okStatus = 200,
  onError?: (i: number, status: number) => void,
): Promise<Run> {
  const s0 = cpuMs(side.serverPid);
  const d0 = side.dbCpu();
  const r = await runLoad(side.client, make, { requests, concurrency, headers: side.headers, okStatus, onError });
  const s1 = cpuMs(side.serverPid);
  const d1 = side.dbCpu();
  return {
    requests: r.requests,
    rps: r.rps,
    p50: percentile(r.latencies, 50),
    p99: percentile(r.latencies, 99),
    errors: r.errors,
    firstError: r.firstError,
    cpuServer: (s1 - s0) / Math.max(1, r.requests),
    cpuDb: (d1 - d0) / Math.max(1, r.requests),
  };
}

const fmt = (n: number, d = 0) => (Number.isFinite(n) ? n.toFixed(d) : '—');

/** Request generators for a scenario; names in the same pseudo-random order on both sides. */
function maker(id: ScenarioId, side: Side, size: number, createName: () => { i: number; name: string }): (i: number) => RequestSpec {
  if (id === 'list') return (i) => side.list(LIST_QUERIES[i % LIST_QUERIES.length]!);
  if (id === 'gql-connection') return (i) => side.gqlConnection(LIST_QUERIES[i % LIST_QUERIES.length]!);
  if (id === 'gql-pointer') return (i) => side.gqlPointer(i);
  if (id === 'create') {
    return () => {
      const c = createName();
      return side.create(c.i, c.name);
    };
  }
  const gen = objectIndexes(size);
  const next = () => objectName(gen.next().value as number);
  return id === 'get' ? () => side.get(next()) : () => side.gqlGet(next());
}

/**
 * A list answer for the check. A 503 (the gateway's store deadline, which FerretDB's scans can
 * pass at 20k) is retried twice; if it persists, undefined: that query is not checked and the
 * timed runs count such answers as failures.
 */
async function listForCheck(side: Side, q: ListQuery): Promise<{ total: number; names: string[] } | undefined> {
  for (let attempt = 0; ; attempt++) {
    const r = await side.client.request(side.list(q), side.headers);
    if (r.status === 200) return side.readList(JSON.parse(r.body.toString('utf8')));
    if (r.status !== 503 || attempt === 2) {
      if (r.status === 503) return undefined;
      throw new Error(`${side.name} list ${q.name}/${q.team} → ${r.status}: ${r.body.toString('utf8').slice(0, 300)}`);
    }
  }
}

async function verify(gw: Side, parse: Side, size: number): Promise<number> {
  let first = -1;
  for (const q of LIST_QUERIES) {
    const a = await listForCheck(gw, q);
    const b = await listForCheck(parse, q);
    if (!a || !b) {
      console.log(`  list ${q.name}/${q.team} not checked: the ${!a ? 'gateway' : 'Parse'} answered 503 three times`);
      continue;
    }
    if (a.total !== b.total || a.names.join(',') !== b.names.join(',')) {
      throw new Error(`gateway and Parse disagree on ${q.name}/${q.team}: total ${a.total} vs ${b.total}, page ${a.names.join(',')} vs ${b.names.join(',')}`);
    }
    if (first < 0) first = a.total;
  }
  const name = objectName(size - 1);
  const a = (await gw.client.json(gw.get(name), gw.headers)) as { metadata: { name: string }; spec: { name: string } };
  const b = (await parse.client.json(parse.get(name), parse.headers)) as { objectId: string; name: string };
  if (a.metadata.name !== name || b.objectId !== name || a.spec.name !== b.name) throw new Error(`gets disagree for ${name}`);
  const g = (await gw.client.json(gw.gqlGet(name), gw.headers)) as { data?: { peopleExampleCom_v1alpha1_person?: { spec: { name: string } } } };
  const p = (await parse.client.json(parse.gqlGet(name), parse.headers)) as { data?: { person?: { name: string } } };
  if (g.data?.peopleExampleCom_v1alpha1_person?.spec.name !== a.spec.name || p.data?.person?.name !== a.spec.name) {
    throw new Error(`GraphQL gets disagree for ${name}: ${JSON.stringify(g).slice(0, 200)} / ${JSON.stringify(p).slice(0, 200)}`);
  }
  return first;
}

/**
 * Seeds objects from … to - 1 (measured). A create that failed (a 503 at the store deadline under
 * load) counts as a failure of the run and is then retried, unmeasured, until it answers 201 or
 * 409 (an abandoned write that completed after all), so both sides hold the same objects.
 */
async function seedSide(side: Side, from: number, to: number, concurrency: number): Promise<Run> {
  let failed: number[] = [];
  const run = await measure(side, (k) => side.create(from + k, objectName(from + k)), to - from, concurrency, 201, (k) => failed.push(from + k));
  for (let attempt = 0; attempt < 5 && failed.length; attempt++) {
    const again: number[] = [];
    for (const i of failed) {
      const r = await side.client.request(side.create(i, objectName(i)), side.headers).catch(() => ({ status: 0, body: Buffer.alloc(0) }));
      // Already there: the gateway answers 409, Parse 400 with code 137 (DUPLICATE_VALUE).
      const exists = r.status === 409 || (r.status === 400 && r.body.toString('utf8').includes('"code":137'));
      if (r.status !== 201 && !exists) again.push(i);
    }
    failed = again;
  }
  if (failed.length) throw new Error(`${side.name}: ${failed.length} seeding creates still failed after 5 attempts (${run.firstError})`);
  return run;
}

/** Requests for one run: as many as fit `maxSeconds` at the warm-up's rate, within [minRequests, requests]. */
async function plan(o: PeerOptions, side: Side, make: (i: number) => RequestSpec, okStatus: number): Promise<number> {
  if (o.warmup === 0) return o.requests;
  const one = await runLoad(side.client, make, { requests: 1, concurrency: 1, headers: side.headers, okStatus });
  // A scenario that takes seconds per request is not warmed up further; its rate is estimated from that one.
  let rps = one.rps;
  if (!one.errors && one.elapsedMs * (o.warmup / o.concurrency) < (o.maxSeconds * 1000) / 2) {
    const w = await runLoad(side.client, make, { requests: o.warmup, concurrency: o.concurrency, headers: side.headers, okStatus, deadlineMs: (o.maxSeconds * 1000) / 2 });
    rps = w.rps;
  }
  return Math.max(o.minRequests, Math.min(o.requests, Math.floor(rps * o.maxSeconds)));
}

async function measureSize(o: PeerOptions, gw: Side, parse: Side, size: number, have: number, createSeq: { n: number }, last: boolean): Promise<PeerSize> {
  console.log(`\n--- gateway vs Parse, ${size.toLocaleString('en-US')} objects ---`);
  const seedG = await seedSide(gw, have, size, o.concurrency);
  console.log(`  seeded gateway ${size - have} objects at ${fmt(seedG.rps)}/s (${seedG.errors} failed and retried${seedG.errors ? `: ${seedG.firstError}` : ''})`);
  const seedP = await seedSide(parse, have, size, o.concurrency);
  console.log(`  seeded Parse   ${size - have} objects at ${fmt(seedP.rps)}/s (${seedP.errors} failed and retried${seedP.errors ? `: ${seedP.firstError}` : ''})`);
  if (have === 0) {
    const contacts = Math.min(CONTACTS, size);
    await seedDeals(gw, contacts, o.concurrency);
    await seedDeals(parse, contacts, o.concurrency);
    console.log(`  seeded ${DEALS} deals on both sides, referring to ${contacts} people`);
  }
  const matches = await verify(gw, parse, size);
  await verifyConnections(gw, parse);
  console.log(`  answers agree (totals, pages, gets, GraphQL gets, connections, deal pages with their contacts); the first list query matches ${matches} of ${size}`);

  const runs: PeerSize['runs'] = {};
  const created: { gateway: string[]; parse: string[] } = { gateway: [], parse: [] };
  // Creates: the same objects on both sides (names created-<n>, data of object n, spec.name prefixed).
  const names = { gateway: { n: createSeq.n }, parse: { n: createSeq.n } };
  const createName = (side: Side) => () => {
    const k = names[side.name].n++;
    const name = `${CREATED}${String(k).padStart(7, '0')}`;
    created[side.name].push(name);
    return { i: k, name };
  };
  const order = (['get', 'gql-get', 'list', 'gql-connection', 'gql-pointer', 'create'] as ScenarioId[]).filter((id) => !o.scenarios || o.scenarios.includes(id));
  const counts = new Map<string, number>();
  const runScenario = async (id: ScenarioId, round: number) => {
    const sides = round % 2 === 0 ? [gw, parse] : [parse, gw];
    for (const side of sides) {
      const ok = id === 'create' ? 201 : 200;
      const key = `${id}/${side.name}`;
      if (!counts.has(key)) {
        counts.set(key, id === 'create' ? o.creates : await plan(o, side, maker(id, side, size, createName(side)), ok));
      }
      const r = await measure(side, maker(id, side, size, createName(side)), counts.get(key)!, o.concurrency, ok);
      ((runs[id] ??= { gateway: [], parse: [] })[side.name]).push(r);
      console.log(
        `  round ${round + 1} ${id.padEnd(14)} ${side.name.padEnd(7)} ${fmt(r.rps).padStart(6)} req/s  p50 ${fmt(r.p50, 1)} ms  p99 ${fmt(r.p99, 1)} ms  ` +
          `CPU ${fmt(r.cpuServer, 2)} + db ${fmt(r.cpuDb, 2)} ms/req${r.errors ? `  ${r.errors} FAILED (${r.firstError})` : ''}`,
      );
    }
  };
  for (let round = 0; round < o.rounds; round++) for (const id of order.filter((x) => x !== 'create')) await runScenario(id, round);
  if (order.includes('create')) for (let round = 0; round < o.rounds; round++) await runScenario('create', round);
  createSeq.n = Math.max(names.gateway.n, names.parse.n);
  // Remove what the create scenario added, so the next size starts exact (after the last size
  // there is none: on FerretDB each of the gateway's deletes scans the collection, its
  // compare-and-set filter has more than `_id`, which takes long at 20,000 objects). A delete
  // that fails (503 at the store deadline under load) is retried; 404 means an earlier attempt
  // got through.
  for (const side of last ? [] : [gw, parse]) {
    let left = created[side.name];
    for (let attempt = 0; attempt < 5 && left.length; attempt++) {
      const failed: string[] = [];
      let next = 0;
      await Promise.all(
        Array.from({ length: o.concurrency }, async () => {
          while (next < left.length) {
            const name = left[next++]!;
            const r = await side.client.request(side.remove(name), side.headers).catch(() => ({ status: 0 }));
            if (r.status !== 200 && r.status !== 404) failed.push(name);
          }
        }),
      );
      left = failed;
    }
    if (left.length) console.log(`  removing ${side.name}'s created objects: ${left.length} of ${created[side.name].length} still failed after 5 attempts`);
  }
  return { size, matches, seed: { gateway: seedG, parse: seedP }, runs };
}

// ---------------------------------------------------------------------------------------------
// Set-up

/** Installs bench/parse (npm ci from its lock file) unless parse-server is already there. */
export async function ensureParseInstalled(): Promise<void> {
  const pkg = join(PARSE_DIR, 'node_modules', 'parse-server', 'package.json');
  if (existsSync(pkg) && (JSON.parse(readFileSync(pkg, 'utf8')) as { version: string }).version === PARSE_VERSION) return;
  console.log(`installing parse-server ${PARSE_VERSION} into bench/parse (npm ci, first use only)…`);
  await new Promise<void>((res, rej) => {
    const p = spawn('npm', ['ci', '--no-audit', '--no-fund', '--prefix', PARSE_DIR], { stdio: 'inherit' });
    p.once('error', rej);
    p.once('exit', (code) => (code === 0 ? res() : rej(new Error(`npm ci --prefix bench/parse exited with ${code}`))));
  });
}

async function benchPair(o: PeerOptions, pair: PeerPair): Promise<PeerResult> {
  console.log(`\n=== gateway vs Parse Server ${PARSE_VERSION}: ${pair === 'mongodb' ? 'each on its own FerretDB' : 'embedded store vs Parse on PostgreSQL'} ===`);
  const notes: string[] = [];
  const appId = 'svc-bench';
  const masterKey = `mk-${randomBytes(12).toString('hex')}`;
  const maintenanceKey = `mt-${randomBytes(12).toString('hex')}`;
  let gwConfig: GatewayChildConfig;
  let parseUri: string;
  let gwDbCpu: () => number;
  let parseDbCpu: () => number;
  let label: string;
  if (pair === 'mongodb') {
    const fa = await startFerretdb({ database: 'svc_bench' });
    o.onCleanup(() => fa.stop());
    const fb = await startFerretdb({ database: 'parse_bench' });
    o.onCleanup(() => fb.stop());
    const pa = ferretdbPid(fa.port);
    const pb = ferretdbPid(fb.port);
    const tmp = await mkdtemp(join(tmpdir(), 'svc-bench-parse-'));
    o.onCleanup(() => rm(tmp, { recursive: true, force: true }));
    gwConfig = { dataDir: join(tmp, 'data'), mongodbUrl: fa.url, pluginsDir: o.pluginsDir, adminPassword: o.adminPassword };
    parseUri = fb.url;
    gwDbCpu = () => cpuMs(pa);
    parseDbCpu = () => cpuMs(pb);
    label = `gateway on FerretDB (pid ${pa}) vs Parse Server ${PARSE_VERSION} with its MongoDB adapter on FerretDB (pid ${pb}), same binary, SQLite backend`;
  } else {
    const pg = await startPostgres();
    o.onCleanup(() => pg.stop());
    const tmp = await mkdtemp(join(tmpdir(), 'svc-bench-parse-'));
    o.onCleanup(() => rm(tmp, { recursive: true, force: true }));
    gwConfig = { dataDir: join(tmp, 'data'), pluginsDir: o.pluginsDir, adminPassword: o.adminPassword };
    parseUri = pg.url;
    gwDbCpu = () => 0;
    parseDbCpu = () => cpuMs(pg.pid, true);
    label = `gateway embedded store (SQLite in-process, WAL, synchronous=NORMAL) vs Parse Server ${PARSE_VERSION} on ${pg.version} (synchronous_commit=off)`;
    notes.push(`PostgreSQL runs with synchronous_commit=off, the analogue of the embedded store's SQLite WAL with synchronous=NORMAL (no flush per commit); its CPU is the postmaster's and its backends'.`);
  }
  console.log(`  ${label}`);
  const gwChild = await BenchChild.start('gateway', 'gateway-child.ts', gwConfig);
  o.onCleanup(() => gwChild.stop());
  const parseChild = await BenchChild.start('parse', '../parse/parse-child.cjs', {
    kind: pair === 'mongodb' ? 'mongodb' : 'postgres',
    databaseURI: parseUri,
    appId,
    masterKey,
    maintenanceKey,
  });
  o.onCleanup(() => parseChild.stop());
  const skipped = (parseChild.ready.skippedIndexes as string[] | undefined) ?? [];
  if (pair === 'mongodb') {
    const s = `Parse on FerretDB: the harness skipped ${skipped.length} index creation(s) FerretDB 1.24 rejects: ${skipped.join('; ') || 'none'}. Every other index Parse creates, and the Person indexes, exist.`;
    console.log(`  ${s}`);
    notes.push(s);
  }
  console.log(`  gateway pid ${gwChild.pid} (${gwChild.url}), Parse pid ${parseChild.pid} (${parseChild.url})`);
  const gw = gatewaySide(gwChild, o.adminPassword, gwDbCpu, o.pageSize);
  const parse = parseSide(parseChild, appId, masterKey, parseDbCpu, o.pageSize);
  const result: PeerResult = { pair, label, notes, sizes: [] };
  try {
    await createParseClass(parse);
    let have = 0;
    const createSeq = { n: 0 };
    for (const size of o.sizes) {
      const t0 = performance.now();
      try {
        result.sizes.push(await measureSize(o, gw, parse, size, have, createSeq, size === o.sizes.at(-1)));
      } catch (e) {
        // Keep what was measured at the smaller sizes.
        const msg = `Stopped at ${size.toLocaleString('en-US')} objects: ${(e as Error).message}`;
        console.log(`  ${msg}`);
        notes.push(msg);
        break;
      }
      have = size;
      console.log(`  (${size.toLocaleString('en-US')} objects took ${fmt((performance.now() - t0) / 1000)} s)`);
    }
  } finally {
    gw.client.close();
    parse.client.close();
    await parseChild.stop();
    await gwChild.stop();
  }
  return result;
}

export async function benchParse(o: PeerOptions): Promise<PeerResult[]> {
  await ensureParseInstalled();
  const out: PeerResult[] = [];
  for (const pair of o.pairs) {
    try {
      out.push(await benchPair(o, pair));
    } catch (e) {
      if (pair === 'embedded' && (e as Error).message.startsWith('PostgreSQL')) {
        console.log(`  skipped: ${(e as Error).message}`);
        out.push({ pair, label: 'skipped', notes: [(e as Error).message], sizes: [] });
      } else throw e;
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Report

const med = (runs: Run[], f: (r: Run) => number) => median(runs.map(f));
const paired = (a: Run[], b: Run[]) => median(a.map((r, i) => r.rps / b[i]!.rps));

export function parseReport(o: PeerOptions, results: PeerResult[]): string {
  const lines: string[] = [];
  for (const r of results) {
    lines.push(`\n### Gateway vs Parse Server ${PARSE_VERSION}: ${r.pair === 'mongodb' ? 'FerretDB' : 'embedded vs PostgreSQL'}\n`);
    lines.push(r.label);
    if (!r.sizes.length) {
      for (const n of r.notes) lines.push(`\n${n}`);
      continue;
    }
    lines.push('');
    lines.push(
      '| objects | scenario | gateway ÷ Parse | gateway req/s | Parse req/s | p50 ms gw / Parse | p99 ms gw / Parse | failed gw / Parse | server CPU ms/req gw (+ db) | Parse (+ db) | CPU per request Parse ÷ gw |',
    );
    lines.push('|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const s of r.sizes) {
      const row = (name: string, g: Run[], p: Run[], ratio: number) => {
        const fails = (x: Run[]) => x.reduce((a, b) => a + b.errors, 0);
        const tot = (x: Run[]) => x.reduce((a, b) => a + b.requests, 0);
        lines.push(
          `| ${s.size.toLocaleString('en-US')} | ${name} | **${fmt(ratio, 2)}**${fails(g) + fails(p) ? ' (failures: see column)' : ''} | ${fmt(med(g, (x) => x.rps))} | ${fmt(med(p, (x) => x.rps))} | ` +
            `${fmt(med(g, (x) => x.p50), 1)} / ${fmt(med(p, (x) => x.p50), 1)} | ${fmt(med(g, (x) => x.p99), 1)} / ${fmt(med(p, (x) => x.p99), 1)} | ` +
            `${fails(g)} of ${tot(g)} / ${fails(p)} of ${tot(p)} | ` +
            `${fmt(med(g, (x) => x.cpuServer), 2)} (+ ${fmt(med(g, (x) => x.cpuDb), 2)}) | ${fmt(med(p, (x) => x.cpuServer), 2)} (+ ${fmt(med(p, (x) => x.cpuDb), 2)}) | ` +
            `${fmt(med(p, (x) => x.cpuServer + x.cpuDb) / med(g, (x) => x.cpuServer + x.cpuDb), 2)} |`,
        );
      };
      for (const sc of [SCENARIOS[3]!, SCENARIOS[0]!, SCENARIOS[1]!, SCENARIOS[2]!, SCENARIOS[4]!, SCENARIOS[5]!]) {
        const rr = s.runs[sc.id];
        if (rr) row(sc.label, rr.gateway, rr.parse, paired(rr.gateway, rr.parse));
      }
      row('seeding (sustained single creates)', [s.seed.gateway], [s.seed.parse], s.seed.gateway.rps / s.seed.parse.rps);
    }
    for (const n of r.notes) lines.push(`\n${n}`);
    for (const s of r.sizes) lines.push(`\nAt ${s.size.toLocaleString('en-US')} objects the first list query matches ${s.matches} (both sides agree on every total and page).`);
  }
  lines.push(
    `\nSettings: sizes ${o.sizes.join(', ')}; ${o.concurrency} clients; ${o.rounds} interleaved rounds per scenario (the side that goes first alternates), ` +
      `reads up to ${o.requests} requests per run within ${o.maxSeconds} s (≥ ${o.minRequests}), ${o.creates} creates per run and side (deleted again before the next size); ` +
      `ratio = median over rounds of gateway req/s ÷ Parse req/s; CPU = utime+stime from /proc per request, median over rounds ` +
      '(on a loaded machine the CPU ratio, Parse ÷ gateway, is the steadier measure of the two). ' +
      'Gateway requests as the administrator (Basic), Parse requests with the master key.',
  );
  return lines.join('\n');
}
