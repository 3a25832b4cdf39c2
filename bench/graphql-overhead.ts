/**
 * What the cost limit and the persisted-operation lookup (issue 32: "add ≤ 5 % to a GraphQL
 * get") cost per request, in process, isolated: the gateway has no switch to turn them off, so
 * bench/cpu-pair.ts can only compare a checkout from before they existed (88c13fd) with now, and
 * that difference holds everything else that changed in between. This measures the two steps
 * alone, on the schema the gateway builds from plugins/ (embedded store, no HTTP):
 *   cost       the cost step useCostLimit runs per request (costCalculator: kept per document,
 *              operation and values of the variables the cost reads) for the GraphQL get of
 *              bench/lib/dataset.ts with a rotating `$name`;
 *   cost-uncached  operationCost alone, what a miss (a new document or page size) pays;
 *   lookup     PersistedOperations.resolve of a plain request (no hash): what every request pays;
 *   apq-text   resolve with the query text and its hash (APQ registration: hashes the text);
 *   apq-hash   resolve by hash alone (APQ hit: a map lookup).
 * Printed: µs per call (median of rounds, after one warm-up round). With --gql-get-us=N (the "after gql-get" CPU µs per
 * request from bench/cpu-pair.ts), also (cost + lookup) ÷ N, the share of a GraphQL get.
 *
 *   npx tsx bench/graphql-overhead.ts [--calls 20000] [--rounds 5] [--gql-get-us 1200]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { parse } from 'graphql';
import { pino } from 'pino';
import { buildGatewaySchema } from '../src/graphql/build-schema.js';
import { costCalculator, operationCost } from '../src/graphql/cost.js';
import { PersistedOperations, sha256Hex } from '../src/graphql/persisted.js';
import { loadPlugins } from '../src/plugins/loader.js';
import { Registry } from '../src/registry/registry.js';
import { openStore } from '../src/server.js';
import { GQL_GET, objectName } from './lib/dataset.js';

const { values } = parseArgs({
  options: { calls: { type: 'string', default: '20000' }, rounds: { type: 'string', default: '5' }, 'gql-get-us': { type: 'string' } },
});
const CALLS = Number(values.calls);
const ROUNDS = Number(values.rounds);
const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..');

const tmp = await mkdtemp(join(tmpdir(), 'svc-gql-overhead-'));
const store = await openStore({
  port: 0,
  host: '127.0.0.1',
  dataDir: tmp,
  pluginsDir: join(repo, 'plugins'),
  adminUsername: 'admin',
  adminPassword: 'pw-bench-123456',
  logLevel: 'silent',
});
try {
  const registry = new Registry(store);
  await loadPlugins(join(repo, 'plugins'), registry, pino({ level: 'silent' }));
  const schema = buildGatewaySchema(registry.entries());
  const document = parse(GQL_GET);
  const costOf = costCalculator(); // what the plugin runs per request (kept per document and multiplier values)
  const cost = operationCost(schema, document, undefined, { name: objectName(0) });
  if (cost === undefined) throw new Error('the get has no cost: its variables did not coerce');
  const hash = sha256Hex(GQL_GET);
  const steps: Record<string, (i: number) => unknown> = {
    cost: (i) => costOf(schema, document, undefined, { name: objectName(i % 300) }),
    'cost-uncached': (i) => operationCost(schema, document, undefined, { name: objectName(i % 300) }),
    lookup: (() => {
      const p = new PersistedOperations();
      return () => p.resolve({ query: GQL_GET, extensions: null });
    })(),
    'apq-text': (() => {
      const p = new PersistedOperations();
      return () => p.resolve({ query: GQL_GET, extensions: { persistedQuery: { version: 1, sha256Hash: hash } } });
    })(),
    'apq-hash': (() => {
      const p = new PersistedOperations();
      p.resolve({ query: GQL_GET, extensions: { persistedQuery: { version: 1, sha256Hash: hash } } });
      return () => p.resolve({ extensions: { persistedQuery: { version: 1, sha256Hash: hash } } });
    })(),
  };
  for (const [name, f] of Object.entries(steps)) if (f(1) === undefined) throw new Error(`${name}: no answer`);
  // One unmeasured round first: warms the JIT (the first round is ten times slower).
  const micros: Record<string, number[]> = {};
  for (let round = -1; round < ROUNDS; round++) {
    for (const [name, f] of Object.entries(steps)) {
      const t0 = performance.now();
      for (let i = 0; i < CALLS; i++) f(i);
      if (round >= 0) (micros[name] ??= []).push(((performance.now() - t0) * 1000) / CALLS);
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  console.log(`GraphQL get (cost ${cost}): µs per call, median of ${ROUNDS} rounds × ${CALLS} calls`);
  for (const [name, xs] of Object.entries(micros)) console.log(`  ${name.padEnd(9)} ${median(xs).toFixed(2).padStart(8)}  [${xs.map((x) => x.toFixed(2)).join(' ')}]`);
  const getUs = values['gql-get-us'] ? Number(values['gql-get-us']) : undefined;
  if (getUs) {
    const share = (median(micros.cost!) + median(micros.lookup!)) / getUs;
    console.log(`(cost + lookup) ÷ GraphQL get CPU (${getUs} µs): ${(share * 100).toFixed(2)} % (target ≤ 5 %)`);
  }
} finally {
  await store.close();
  await rm(tmp, { recursive: true, force: true });
}
