/**
 * Server CPU per request of two (or more) checkouts of the gateway, side by side: the way to
 * compare a change on a noisy machine, where throughput swings by a third between runs.
 *
 *   npx tsx bench/cpu-pair.ts [--requests N] [--rounds R] [--warmup W] [--scenarios a,b] [--pin] \
 *     before=/path/to/other/checkout after=. [tuned=.::NAME=VALUE,NAME=VALUE]
 *
 * Each checkout (with its own node_modules) runs as a child process on the embedded store with
 * the same 300 Persons (bench/lib/dataset.ts). After W warm-up requests of every scenario on every
 * gateway, each round sends N requests of each scenario to each gateway in turn (8 keep-alive
 * clients; the order of the gateways alternates between rounds) and reads the gateway's own CPU
 * (user + system) for exactly those requests. Printed: the median µs per request, the rounds,
 * and, for two gateways, the median of the per-round ratios (second ÷ first), which cancels most
 * of the machine's drift. `--pin` puts this process (the clients) on CPU 0 and the gateways on
 * CPU 1 (Linux `taskset`), so the clients do not share the gateway's core.
 *
 * `::` adds environment variables for that gateway alone (to compare a setting read from the
 * environment).
 *
 * Scenarios: rest-get, gql-get, gql-noop (`{ __typename }`), gql-field (the get selecting only
 * `kind`), rest-list, gql-list, rest-keyset and gql-connection (the first page of the keyset
 * bench, bench/lib/keyset.ts), create.
 *
 * Steps with no switch of their own (the GraphQL cost limit, the persisted-operation lookup) are
 * measured in process by bench/graphql-overhead.ts, as a share of this script's gql-get.
 */
import { execFileSync, fork, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { gqlBody as connectionBody, restPath as keysetPath } from './lib/keyset.js';
import { COLLECTION_PATH, GQL_GET, GQL_GET_KIND, GQL_LIST, NAMES, objectName, personBody, TEAM_LABEL, teamOf } from './lib/dataset.js';

const OBJECTS = 300;
const PASSWORD = 'pw-bench-123456';
const AUTH = `Basic ${Buffer.from(`admin:${PASSWORD}`).toString('base64')}`;
const here = dirname(fileURLToPath(import.meta.url));

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    requests: { type: 'string', default: '4000' },
    rounds: { type: 'string', default: '9' },
    warmup: { type: 'string', default: '4000' },
    scenarios: { type: 'string', default: 'rest-get,gql-get' },
    pin: { type: 'boolean', default: false },
  },
});
const N = Number(values.requests);
const ROUNDS = Number(values.rounds);
const WARMUP = Number(values.warmup);
const scenarios = values.scenarios!.split(',');
const checkouts = positionals.map((p) => {
  const at = p.indexOf('=');
  if (at < 1) throw new Error(`expected label=checkout, got "${p}"`);
  const [path, vars = ''] = p.slice(at + 1).split('::');
  const env = Object.fromEntries(vars.split(',').filter(Boolean).map((v) => [v.slice(0, v.indexOf('=')), v.slice(v.indexOf('=') + 1)]));
  return { label: p.slice(0, at), repo: resolve(path!), env };
});
if (checkouts.length === 0) throw new Error('name at least one checkout: label=path');
if (values.pin) execFileSync('taskset', ['-a', '-p', '-c', '0', String(process.pid)], { stdio: 'ignore' });

type Send = (i: number) => Promise<number>;

class Gateway {
  private waiting: ((m: Record<string, unknown>) => void) | undefined;
  private readonly queue: Record<string, unknown>[] = [];
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  private url!: URL;
  readonly send: Record<string, Send> = {};

  constructor(
    readonly label: string,
    private readonly child: ChildProcess,
  ) {
    child.on('message', (m: Record<string, unknown>) => {
      const w = this.waiting;
      this.waiting = undefined;
      if (w) w(m);
      else this.queue.push(m);
    });
  }

  next(): Promise<Record<string, unknown>> {
    const m = this.queue.shift();
    return m ? Promise.resolve(m) : new Promise((r) => (this.waiting = r));
  }

  static async start(label: string, repo: string, env: Record<string, string>): Promise<Gateway> {
    const child = fork(join(here, 'lib/cpu-child.ts'), [], {
      execArgv: ['--import', 'tsx'],
      env: { ...process.env, ...env, SVC_CPU_CHILD_REPO: repo, SVC_CPU_CHILD_PASSWORD: PASSWORD },
    });
    const g = new Gateway(label, child);
    g.url = new URL(String((await g.next()).url));
    if (values.pin) execFileSync('taskset', ['-a', '-p', '-c', '1', String(child.pid)], { stdio: 'ignore' });
    for (let i = 0; i < OBJECTS; i++) {
      const status = await g.request('POST', COLLECTION_PATH, JSON.stringify(personBody(i)));
      if (status !== 201) throw new Error(`${label}: seeding answered ${status}`);
    }
    const list = (fs: string, team: string) =>
      `${COLLECTION_PATH}?fieldSelector=${encodeURIComponent(`spec.name=${fs}`)}&labelSelector=${encodeURIComponent(`${TEAM_LABEL}=${team}`)}&sort=spec.name,asc&size=20&page=1`;
    let created = 0;
    Object.assign(g.send, {
      'rest-get': (i: number) => g.request('GET', `${COLLECTION_PATH}/${objectName(i % OBJECTS)}`),
      'gql-get': (i: number) => g.request('POST', '/graphql', JSON.stringify({ query: GQL_GET, variables: { name: objectName(i % OBJECTS) } })),
      'gql-noop': () => g.request('POST', '/graphql', '{"query":"{ __typename }"}'),
      // The get with one selected field: what the fields themselves cost, against gql-get.
      'gql-field': (i: number) =>
        g.request('POST', '/graphql', JSON.stringify({ query: GQL_GET_KIND, variables: { name: objectName(i % OBJECTS) } })),
      'rest-list': (i: number) => g.request('GET', list(NAMES[i % NAMES.length]!, teamOf(i % NAMES.length))),
      'gql-list': (i: number) =>
        g.request(
          'POST',
          '/graphql',
          JSON.stringify({
            query: GQL_LIST,
            variables: { fs: [`spec.name=${NAMES[i % NAMES.length]}`], ls: [`${TEAM_LABEL}=${teamOf(i % NAMES.length)}`], sort: ['spec.name,asc'], page: 1, size: 20 },
          }),
        ),
      // The first keyset page of the keyset bench (bench/lib/keyset.ts), over REST and as a connection.
      'rest-keyset': () => g.request('GET', keysetPath(20, '')),
      'gql-connection': () => g.request('POST', '/graphql', connectionBody(20, null)),
      // Created objects match none of the measured lists (their own name and team).
      create: () => {
        const body = personBody(OBJECTS + created++) as { metadata: { labels: Record<string, string> }; spec: Record<string, unknown> };
        body.metadata.labels[TEAM_LABEL] = 'team-created';
        body.spec.name = `Created-${created}`;
        return g.request('POST', COLLECTION_PATH, JSON.stringify(body), 201);
      },
    } satisfies Record<string, Send>);
    return g;
  }

  /** One request; resolves with its status, rejects on a status other than `ok`. */
  request(method: string, path: string, body?: string, ok = method === 'POST' && path !== '/graphql' ? 201 : 200): Promise<number> {
    return new Promise((res, rej) => {
      const headers: Record<string, string | number> = { authorization: AUTH };
      if (body !== undefined) {
        headers['content-type'] = 'application/json';
        headers['content-length'] = Buffer.byteLength(body);
      }
      const r = http.request({ host: this.url.hostname, port: this.url.port, method, path, agent: this.agent, headers }, (resp) => {
        resp.resume();
        resp.on('end', () => (resp.statusCode === ok ? res(ok) : rej(new Error(`${this.label} ${method} ${path}: ${resp.statusCode}`))));
      });
      r.on('error', rej);
      r.end(body);
    });
  }

  async cpuOf(run: () => Promise<void>): Promise<number> {
    this.child.send({ cmd: 'start' });
    await this.next();
    await run();
    this.child.send({ cmd: 'stop' });
    return Number((await this.next()).cpuMicros);
  }

  exit(): void {
    this.child.send({ cmd: 'exit' });
  }
}

async function load(send: Send, n: number): Promise<void> {
  let k = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (k < n) await send(k++);
    }),
  );
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const gateways: Gateway[] = [];
for (const c of checkouts) gateways.push(await Gateway.start(c.label, c.repo, c.env));
for (const g of gateways) for (const s of scenarios) await load(g.send[s]!, WARMUP);
const perRequest = new Map<string, number[]>();
for (let round = 0; round < ROUNDS; round++) {
  for (const s of scenarios) {
    for (const g of round % 2 ? [...gateways].reverse() : gateways) {
      const micros = await g.cpuOf(() => load(g.send[s]!, N));
      const key = `${g.label} ${s}`;
      perRequest.set(key, [...(perRequest.get(key) ?? []), micros / N]);
    }
  }
}
console.log(`server CPU µs per request: median of ${ROUNDS} rounds × ${N} requests (8 clients${values.pin ? ', pinned' : ''})`);
for (const g of gateways) {
  for (const s of scenarios) {
    const xs = perRequest.get(`${g.label} ${s}`)!;
    console.log(`${`${g.label} ${s}`.padEnd(24)} ${median(xs).toFixed(1).padStart(7)}   rounds ${xs.map((x) => x.toFixed(0)).join(' ')}`);
  }
}
if (gateways.length === 2) {
  const [a, b] = gateways as [Gateway, Gateway];
  for (const s of scenarios) {
    const xa = perRequest.get(`${a.label} ${s}`)!;
    const xb = perRequest.get(`${b.label} ${s}`)!;
    const ratios = xa.map((x, i) => xb[i]! / x);
    console.log(`${s}: ${b.label} ÷ ${a.label} per round, median ${median(ratios).toFixed(3)} [${ratios.map((r) => r.toFixed(2)).join(' ')}]`);
  }
}
for (const g of gateways) {
  if (scenarios.includes('rest-get') && scenarios.includes('gql-get')) {
    const r = perRequest.get(`${g.label} rest-get`)!.map((x, i) => x / perRequest.get(`${g.label} gql-get`)![i]!);
    console.log(`${g.label}: REST get ÷ GraphQL get CPU per round, median ${median(r).toFixed(3)} (the throughput ratio GraphQL ÷ REST when the gateway is the bottleneck)`);
  }
  if (scenarios.includes('rest-list') && scenarios.includes('gql-list')) {
    const r = perRequest.get(`${g.label} rest-list`)!.map((x, i) => x / perRequest.get(`${g.label} gql-list`)![i]!);
    console.log(`${g.label}: REST list ÷ GraphQL list CPU per round, median ${median(r).toFixed(3)}`);
  }
}
for (const g of gateways) g.exit();
