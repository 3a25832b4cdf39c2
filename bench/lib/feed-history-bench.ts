/**
 * Change-log retention (embedded): does a long change log slow writes? In-process write
 * throughput (`ModelStore.create` of the Person model, store opened with `openStore` and the
 * plugins registered, no HTTP, one write in flight) with an empty change log vs the same model
 * after `prior` earlier writes, at the retention in force (SVC_FEED_RETENTION_*, default 100,000
 * events / 24 h: the full log then holds 100,000 changes and every measured write pushes it over,
 * so retention passes prune as they would in steady state). Target: full ÷ empty ≥ 0.9.
 *
 *   full   one data directory: `UPDATE_SET` objects created, then `prior` updates of them, so
 *          the change log grows and the object table does not; after each round its measured
 *          objects are removed again (not measured), so every round starts from the same objects;
 *   empty  a fresh data directory per round (only its own warm-up and measured creates are in
 *          the log), so both stores hold about as many objects and only the change log differs.
 * A round creates `writes` objects in each store, in chunks of CHUNK that alternate between the
 * two (which store goes first alternates too), so both see the same machine load, which on a
 * shared machine drifts within seconds. Per round: full ÷ empty of writes per second (wall clock)
 * and of this process's CPU time per write; reported: the medians over rounds.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pino } from 'pino';
import type { Config } from '../../src/config.js';
import { createObject } from '../../src/operations/index.js';
import type { ModelEntry } from '../../src/operations/types.js';
import { loadPlugins } from '../../src/plugins/loader.js';
import { allowAll, ANONYMOUS } from '../../src/identity/authorizer.js';
import { Registry } from '../../src/registry/registry.js';
import { openStore } from '../../src/server.js';
import { retentionFromEnv } from '../../src/store/feed/index.js';
import type { ApiObject } from '../../src/store/object.js';
import type { Store } from '../../src/store/types.js';
import { GROUP, personBody, PLURAL, VERSION } from './dataset.js';
import { median } from './load.js';

export interface FeedHistoryOptions {
  /** A config for the embedded store; each data directory is made under `workDir`. */
  config: Config;
  workDir: string;
  /** Writes before the `full` measurements. */
  prior: number;
  /** Measured creates per store and round. */
  writes: number;
  rounds: number;
}

export interface FeedHistoryRow {
  what: string;
  value: number;
  unit: string;
  target: string;
  pass?: boolean;
}

export interface FeedHistoryResult {
  rows: FeedHistoryRow[];
  notes: string[];
}

const UPDATE_SET = 100;
/** Creates before the first measurement on a store (JIT, caches). */
const WARMUP = 500;

interface Opened {
  store: Store;
  entry: ModelEntry;
  /** The stored shape of a Person, as the operations layer writes it. */
  template: ApiObject;
}

async function open(config: Config, dataDir: string): Promise<Opened> {
  await mkdir(dataDir, { recursive: true });
  const store = await openStore({ ...config, dataDir, mongodbUrl: undefined });
  const registry = new Registry(store);
  await loadPlugins(config.pluginsDir, registry, pino({ level: 'silent' }));
  const entry = registry.find(GROUP, VERSION, PLURAL);
  if (!entry) throw new Error(`model ${GROUP}/${VERSION} ${PLURAL} was not registered from ${config.pluginsDir}`);
  const first = await createObject({ caller: ANONYMOUS, authorizer: allowAll }, entry, { ...personBody(0), metadata: { name: 'template' } });
  const template = (await entry.store.get(first.metadata.name))!;
  return { store, entry, template };
}

/** Person i as stored, under a name of its own. */
function person(t: ApiObject, i: number, name: string): ApiObject {
  const body = personBody(i) as { metadata: { labels: Record<string, string> }; spec: Record<string, unknown> };
  return { ...t, metadata: { ...t.metadata, name, labels: body.metadata.labels, version: 1 }, spec: body.spec };
}

interface Run {
  /** Writes per second (wall clock). */
  rate: number;
  /** This process's CPU time (user + system) per write, µs. */
  cpu: number;
}

const CHUNK = 250;

/** One round: `n` creates in each store, chunk by chunk in turns; afterwards `full`'s are removed (not measured). */
async function round(empty: Opened, full: Opened, tag: string, n: number, fullFirst: boolean): Promise<{ empty: Run; full: Run }> {
  const time = { empty: { ms: 0, cpu: 0 }, full: { ms: 0, cpu: 0 } };
  const chunk = async (which: 'empty' | 'full', from: number) => {
    const o = which === 'empty' ? empty : full;
    const objs = Array.from({ length: Math.min(CHUNK, n - from) }, (_, i) => person(o.template, from + i, `${tag}-${from + i}`));
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    for (const obj of objs) await o.entry.store.create(obj);
    time[which].ms += performance.now() - t0;
    const c = process.cpuUsage(c0);
    time[which].cpu += c.user + c.system;
  };
  for (let from = 0, k = 0; from < n; from += CHUNK, k++) {
    const order: ('empty' | 'full')[] = (k % 2 === 0) === fullFirst ? ['full', 'empty'] : ['empty', 'full'];
    for (const which of order) await chunk(which, from);
  }
  for (let i = 0; i < n; i++) await full.entry.store.remove(`${tag}-${i}`, 1);
  const run = (t: { ms: number; cpu: number }): Run => ({ rate: n / (t.ms / 1000), cpu: t.cpu / n });
  return { empty: run(time.empty), full: run(time.full) };
}

export async function benchFeedHistory(o: FeedHistoryOptions, log: (line: string) => void = console.log): Promise<FeedHistoryResult> {
  const retention = retentionFromEnv();
  const fmt = (n: number) => n.toLocaleString('en-US', { maximumFractionDigits: 0 });
  log(`  retention ${fmt(retention.maxEvents)} events / ${fmt(retention.maxAgeMs / 1000)} s; ${fmt(o.prior)} prior writes; ${o.rounds} rounds × ${fmt(o.writes)} creates per store`);

  const full = await open(o.config, join(o.workDir, 'full'));
  const notes: string[] = [];
  try {
    for (let i = 0; i < WARMUP; i++) await full.entry.store.create(person(full.template, i, `warm-${i}`));
    const objs = Array.from({ length: UPDATE_SET }, (_, i) => person(full.template, i, `u-${i}`));
    for (const obj of objs) await full.entry.store.create(obj);
    const t0 = performance.now();
    for (let i = 0; i < o.prior; i++) {
      const k = i % UPDATE_SET;
      const cur = objs[k]!;
      const version = cur.metadata.version ?? 1;
      objs[k] = await full.entry.store.update({ ...cur, metadata: { ...cur.metadata, version: version + 1 }, spec: { ...(cur.spec as Record<string, unknown>), age: i % 90 } }, version);
    }
    const priorSeconds = (performance.now() - t0) / 1000;
    log(`  full: ${fmt(o.prior)} prior updates in ${priorSeconds.toFixed(1)} s (${fmt(o.prior / priorSeconds)} writes/s, growing the log from ${fmt(WARMUP + UPDATE_SET + 1)} changes)`);
    notes.push(`prior ${fmt(o.prior)} updates (log growing from empty to the retention bound and beyond): ${fmt(o.prior / priorSeconds)} writes/s`);

    const empties: Run[] = [];
    const fulls: Run[] = [];
    for (let r = 0; r < o.rounds; r++) {
      const empty = await open(o.config, join(o.workDir, `empty-${r}`));
      try {
        for (let i = 0; i < WARMUP; i++) await empty.entry.store.create(person(empty.template, i, `warm-${i}`));
        const m = await round(empty, full, `r${r}`, o.writes, r % 2 === 1);
        empties.push(m.empty);
        fulls.push(m.full);
      } finally {
        await empty.store.close();
      }
      const e = empties[r]!;
      const f = fulls[r]!;
      log(
        `  round ${r + 1}: empty log ${fmt(e.rate)} writes/s (${fmt(e.cpu)} µs CPU each), after ${fmt(o.prior)} writes ${fmt(f.rate)} writes/s ` +
          `(${fmt(f.cpu)} µs CPU each); ratio ${(f.rate / e.rate).toFixed(3)}, by CPU ${(e.cpu / f.cpu).toFixed(3)}`,
      );
    }
    const ratio = median(fulls.map((f, i) => f.rate / empties[i]!.rate));
    const byCpu = median(fulls.map((f, i) => empties[i]!.cpu / f.cpu));
    return {
      rows: [
        { what: 'create, empty change log', value: median(empties.map((x) => x.rate)), unit: 'writes/s', target: '—' },
        { what: `create, same model after ${fmt(o.prior)} prior writes`, value: median(fulls.map((x) => x.rate)), unit: 'writes/s', target: '—' },
        { what: 'CPU per create, empty change log', value: median(empties.map((x) => x.cpu)), unit: 'µs', target: '—' },
        { what: `CPU per create, after ${fmt(o.prior)} prior writes`, value: median(fulls.map((x) => x.cpu)), unit: 'µs', target: '—' },
        { what: `create throughput after ${fmt(o.prior)} prior writes ÷ empty log`, value: ratio, unit: '', target: '≥ 0.9', pass: ratio >= 0.9 },
        { what: `(info) the same from this process's CPU time per write (empty ÷ after ${fmt(o.prior)})`, value: byCpu, unit: '', target: '—' },
      ],
      notes,
    };
  } finally {
    await full.store.close();
  }
}
