/**
 * In-process µs per page-mode list (page of 20 plus its exact total) on the embedded store, for
 * the cost of the total (issue 31): `npx tsx bench/list-count.ts [objects] [dataDir]`. Seeds the
 * bench's Person data set (bench/lib/dataset.ts) through the gateway's own code once into
 * dataDir (kept, so runs before and after a change read the same file), then times
 * `ModelStore.list` for the bench's list queries.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pino } from 'pino';
import type { Config } from '../src/config.js';
import { indexesOf } from '../src/operations/list.js';
import { loadPlugins } from '../src/plugins/loader.js';
import { parseListParams } from '../src/query/plan.js';
import { Registry } from '../src/registry/registry.js';
import { openStore } from '../src/server.js';
import { GROUP, LIST_QUERIES, NAMES, PLURAL, TEAM_LABEL, VERSION } from './lib/dataset.js';
import { seed } from './lib/seed.js';

const size = Number(process.argv[2] ?? 50_000);
const dataDir = process.argv[3] ?? `/tmp/svc-list-count-${size}`;
const config: Config = { port: 0, host: '127.0.0.1', dataDir, pluginsDir: join(import.meta.dirname, '..', 'plugins'), adminUsername: 'admin', adminPassword: 'x'.repeat(16), logLevel: 'silent' };

if (!existsSync(join(dataDir, 'svc.sqlite'))) {
  console.log(`seeding ${size} objects into ${dataDir}…`);
  await seed(config, 0, size, 16);
}
const store = await openStore(config);
const registry = new Registry(store);
await loadPlugins(config.pluginsDir, registry, pino({ level: 'silent' }));
const entry = registry.find(GROUP, VERSION, PLURAL)!;
const TIER = `${GROUP}/tier`;
const q0 = LIST_QUERIES[0]!;
const cases: [string, Record<string, unknown>][] = [
  ['tier=tier-0 (1/3), sort spec.name, page 1', { labelSelector: [`${TIER}=tier-0`], sort: ['spec.name,asc'], page: 1, size: 20 }],
  ['tier=tier-0 (1/3), sort spec.name, page 50', { labelSelector: [`${TIER}=tier-0`], sort: ['spec.name,asc'], page: 50, size: 20 }],
  ['team (1/10), sort spec.name, page 1', { labelSelector: [`${TEAM_LABEL}=team-3`], sort: ['spec.name,asc'], page: 1, size: 20 }],
  ['bench list: spec.name + team (0.2 %), sort spec.name', { fieldSelector: [`spec.name=${q0.name}`], labelSelector: [`${TEAM_LABEL}=${q0.team}`], sort: ['spec.name,asc'], page: 1, size: 20 }],
  ['spec.name in 3 names (1.2 %) + tier, sort spec.name', { fieldSelector: [`spec.name in (${NAMES.slice(0, 3).join(',')})`], labelSelector: [`${TIER}=tier-1`], sort: ['spec.name,asc'], page: 1, size: 20 }],
  ['spec.name (0.4 %) + tier notin, sort spec.name', { fieldSelector: [`spec.name=${q0.name}`], labelSelector: [`${TIER} notin (tier-2)`], sort: ['spec.name,asc'], page: 1, size: 20 }],
  ['no filter, sort spec.name, page 1', { sort: ['spec.name,asc'], page: 1, size: 20 }],
];
for (const [label, params] of cases) {
  const q = parseListParams(params as never, indexesOf(entry));
  let total = 0;
  for (let n = 0; n < 20; n++) total = (await entry.store.list(q)).total; // warm-up
  const runs: number[] = [];
  for (let r = 0; r < 5; r++) {
    const n = 200;
    const t = performance.now();
    for (let k = 0; k < n; k++) await entry.store.list(q);
    runs.push(((performance.now() - t) * 1000) / n);
  }
  runs.sort((a, b) => a - b);
  console.log(`${label}: total ${total}, ${runs[0]!.toFixed(0)} µs per list (best of 5 runs of 200; median ${runs[2]!.toFixed(0)})`);
}
await store.close();
