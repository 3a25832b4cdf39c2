/**
 * Feed retention: history is bounded (events and age, configurable) and a resume point older
 * than what is kept is refused with StoreError `Expired` (REST/GraphQL: 410). Both stores,
 * through the port only.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createEmbeddedStore } from '../../src/store/embedded/index.js';
import { createMongoStore } from '../../src/store/mongo/index.js';
import type { FeedRetention } from '../../src/store/feed/index.js';
import type { ChangeEvent, ModelStore, Store } from '../../src/store/types.js';
import { freshMongoUrl } from '../helpers/gateway.js';
import { bump, expectStoreError, makeModel, widget } from '../store/contract.js';

async function open(kind: 'embedded' | 'mongodb', retention: FeedRetention): Promise<{ store: Store; done: () => Promise<void> }> {
  if (kind === 'embedded') {
    const dir = await mkdtemp(join(tmpdir(), 'svc-ret-'));
    const store = await createEmbeddedStore({ dataDir: dir, retention });
    return { store, done: async () => (await store.close(), await rm(dir, { recursive: true, force: true })) };
  }
  const store = await createMongoStore({ url: freshMongoUrl(), retention, feedSegment: 4 });
  return { store, done: () => store.close() };
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const versions = (events: ChangeEvent[]) => events.map((e) => e.object.metadata.version);

/** The changes a watch from `from` replays, once `n` have arrived (or after 10 s). */
async function replay(ms: ModelStore, from: string, n: number): Promise<ChangeEvent[]> {
  const got: ChangeEvent[] = [];
  const stop = await ms.watch(from, (e) => got.push(e));
  for (let i = 0; i < 500 && got.length < n; i++) await new Promise((r) => setTimeout(r, 20));
  stop();
  return got;
}

describe.each(['embedded', 'mongodb'] as const)('feed retention (%s)', (kind) => {
  it('keeps at most the configured number of events; an older position is Expired, a kept one resumes', async () => {
    const writes = kind === 'embedded' ? 300 : 30; // embedded prunes every 256 writes, MongoDB per segment
    const { store, done } = await open(kind, { maxEvents: 5, maxAgeMs: 3600_000 });
    try {
      const ms = await store.model(makeModel());
      const first = await ms.resourceVersion();
      let obj = await ms.create(widget('r'));
      const afterCreate = await ms.resourceVersion();
      for (let i = 1; i < writes; i++) obj = await ms.update(bump(obj, { size: i }), i);
      await new Promise((r) => setTimeout(r, 300)); // MongoDB drops old segments in the background
      await expectStoreError(ms.watch(first, () => {}), 'Expired');
      await expectStoreError(ms.watch(afterCreate, () => {}), 'Expired');
      // a recent position still resumes exactly
      const head = await ms.resourceVersion();
      const got: ChangeEvent[] = [];
      const stop = await ms.watch(head, (e) => got.push(e));
      await ms.update(bump(obj, { size: 0 }), writes);
      for (let i = 0; i < 100 && !got.length; i++) await new Promise((r) => setTimeout(r, 20));
      stop();
      expect(got.map((e) => e.object.metadata.version)).toEqual([writes + 1]);
    } finally {
      await done();
    }
  }, 60_000);

  if (kind === 'mongodb') {
    it('a head read just after another gateway dropped segments is the real head, and a watch from it sees the next write', async () => {
      // B reads the head (and the floor, cached for a second) while the feed is young; A then
      // writes past two segments and drops them. B's next head must not start from a position in
      // the dropped range: it would stop there, and a watch from it would miss what follows.
      const url = freshMongoUrl();
      const a = await createMongoStore({ url, retention: { maxEvents: 5, maxAgeMs: 3600_000 }, feedSegment: 4 });
      const b = await createMongoStore({ url, retention: { maxEvents: 5, maxAgeMs: 3600_000 }, feedSegment: 4 });
      try {
        const model = makeModel();
        const msA = await a.model(model);
        const msB = await b.model(model);
        let obj = await msA.create(widget('r'));
        const young = BigInt(await msB.resourceVersion());
        for (let i = 1; i <= 12; i++) obj = await msA.update(bump(obj, { size: i }), i);
        await new Promise((r) => setTimeout(r, 150)); // A drops old segments in the background
        const head = await msA.resourceVersion();
        expect(BigInt(head)).toBeGreaterThan(young + 12n - 1n);
        expect(await msB.resourceVersion()).toBe(head);
        const got: ChangeEvent[] = [];
        const stop = await msB.watch(await msB.resourceVersion(), (e) => got.push(e));
        await msA.update(bump(obj, { size: 0 }), 13);
        for (let i = 0; i < 250 && !got.length; i++) await new Promise((r) => setTimeout(r, 20));
        stop();
        expect(versions(got)).toEqual([14]);
      } finally {
        await a.close();
        await b.close();
      }
    }, 60_000);
  }

  if (kind === 'embedded') {
    it('counts each model by its own rows, however they interleave; a pass runs within max(256, maxEvents / 16) writes', async () => {
      // Two models writing in turn: the head runs twice as fast as either model's history, so
      // "head − floor" overstates each model's count and only a walk of its own rows decides.
      const maxEvents = 4800;
      const every = Math.max(256, Math.ceil(maxEvents / 16)); // 300: the count pass interval
      const { store, done } = await open(kind, { maxEvents, maxAgeMs: 3600_000 });
      try {
        const a = await store.model(makeModel());
        const b = await store.model(makeModel());
        const first = await a.resourceVersion();
        let objA = await a.create(widget('a'));
        const rvA = ['', await a.resourceVersion()]; // rvA[k]: the position of a's k-th change
        let objB = await b.create(widget('b'));
        for (let k = 2; k <= maxEvents; k++) {
          objA = await a.update(bump(objA, { size: k }), k - 1);
          rvA[k] = await a.resourceVersion();
          objB = await b.update(bump(objB, { size: k }), k - 1);
        }
        // Each holds exactly maxEvents changes, over 2 × maxEvents positions: nothing is pruned.
        expect(versions(await replay(a, first, maxEvents))).toEqual(range(1, maxEvents));
        expect(versions(await replay(b, first, maxEvents))).toEqual(range(1, maxEvents));

        // a alone, until it has exceeded the bound by more than the pass interval.
        const total = maxEvents + every + 1;
        for (let k = maxEvents + 1; k <= total; k++) {
          objA = await a.update(bump(objA, { size: k }), k - 1);
          rvA[k] = await a.resourceVersion();
        }
        await expectStoreError(a.watch(first, () => {}), 'Expired');
        await expectStoreError(a.watch(rvA[1]!, () => {}), 'Expired');
        // the newest maxEvents resume exactly; b's history is untouched
        expect(versions(await replay(a, rvA[total - maxEvents]!, maxEvents))).toEqual(range(total - maxEvents + 1, total));
        expect(versions(await replay(b, first, maxEvents))).toEqual(range(1, maxEvents));
      } finally {
        await done();
      }
    }, 60_000);

    it('drops expired events and keeps young ones; a position between them (another model\'s) still resumes', async () => {
      const maxAgeMs = 3000; // the 300 young writes must finish well within it on a busy machine
      const { store, done } = await open(kind, { maxEvents: 1_000_000, maxAgeMs });
      try {
        const a = await store.model(makeModel());
        const b = await store.model(makeModel());
        let objA = await a.create(widget('a'));
        const early = await a.resourceVersion();
        for (let k = 2; k <= 10; k++) objA = await a.update(bump(objA, { size: k }), k - 1);
        let objB = await b.create(widget('b'));
        for (let k = 2; k <= 3; k++) objB = await b.update(bump(objB, { size: k }), k - 1);
        const between = await b.resourceVersion(); // after a's old changes, before its young ones
        for (let k = 4; k <= 5; k++) objB = await b.update(bump(objB, { size: k }), k - 1);
        await new Promise((r) => setTimeout(r, maxAgeMs + 200));
        // 300 young changes of a: its 256th write (the 246th of these) runs a pass well within maxAgeMs
        for (let k = 11; k <= 310; k++) objA = await a.update(bump(objA, { size: k }), k - 1);
        await expectStoreError(a.watch(early, () => {}), 'Expired');
        expect(versions(await replay(a, between, 300))).toEqual(range(11, 310));
      } finally {
        await done();
      }
    });

    it('drops events older than the configured age', async () => {
      const { store, done } = await open(kind, { maxEvents: 1_000_000, maxAgeMs: 1 });
      try {
        const ms = await store.model(makeModel());
        let obj = await ms.create(widget('a'));
        const early = await ms.resourceVersion();
        await new Promise((r) => setTimeout(r, 10));
        for (let i = 1; i < 300; i++) obj = await ms.update(bump(obj, { size: i }), i);
        await expectStoreError(ms.watch(early, () => {}), 'Expired');
      } finally {
        await done();
      }
    });
  }
});
