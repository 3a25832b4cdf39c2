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
import type { ChangeEvent, Store } from '../../src/store/types.js';
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

  if (kind === 'embedded') {
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
