/**
 * A unique value claimed by a create that never completed because its gateway was killed is
 * free again as soon as that gateway's feed lease shows it gone (docs/API.md §11: within 10 s of
 * the restart), not after the 30 s claim grace (store/mongo/claims.ts). The end-to-end kill -9
 * run is in test/hardening/races.test.ts; a restart there can take longer than the grace on a
 * busy machine, so here the claims of a killed writer are laid down directly: recent (well
 * inside the grace), naming a writer whose lease stopped moving, or a live one.
 */
import { randomBytes } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createMongoStore } from '../../src/store/mongo/index.js';
import { collectionNames } from '../../src/store/mongo/document.js';
import { FEED_META } from '../../src/store/mongo/feed.js';
import type { Store } from '../../src/store/types.js';
import { makeModel, widget } from './contract.js';

describe('MongoDB unique claims of a killed writer', () => {
  const database = `svc_t_claims_${randomBytes(5).toString('hex')}`;
  let store: Store;
  let client: MongoClient;
  beforeAll(async () => {
    store = await createMongoStore({ url: inject('mongodbUrl'), database });
    client = new MongoClient(inject('mongodbUrl'));
  });
  afterAll(async () => {
    await store?.close();
    await client?.db(database).dropDatabase();
    await client?.close();
  });

  it('a value claimed seconds ago by a writer whose lease stopped moving is free; one of a live writer is not', async () => {
    const model = makeModel();
    const ms = await store.model(model);
    const db = client.db(database);
    const claims = db.collection(collectionNames(model.key).claims);
    const meta = db.collection(FEED_META);
    const claim = (value: string, w: string) => ({
      _id: JSON.stringify(['spec.slug', value]) as never,
      x: 'spec.slug',
      val: value,
      n: `creating-${value}`,
      g: 'g1',
      v: 1,
      t: 't',
      at: new Date(Date.now() - 2000), // well inside GRACE_MS
      w,
    });
    // Killed 7 s ago: its lease has not moved since.
    await meta.insertOne({ _id: 'writer:killed' as never, at: new Date(Date.now() - 7000) });
    await claims.insertOne(claim('a', 'killed'));
    // Closed (a clean shutdown deletes the lease) or never had one.
    await claims.insertOne(claim('b', 'closed'));
    // Alive: its lease was renewed just now.
    await meta.insertOne({ _id: 'writer:alive' as never, at: new Date() });
    await claims.insertOne(claim('c', 'alive'));

    const t0 = performance.now();
    await ms.create(widget('takes-a', { slug: 'a' }));
    await ms.create(widget('takes-b', { slug: 'b' }));
    expect(performance.now() - t0).toBeLessThan(5000);
    expect((await claims.findOne({ _id: JSON.stringify(['spec.slug', 'a']) as never }))?.n).toBe('takes-a');
    expect((await claims.findOne({ _id: JSON.stringify(['spec.slug', 'b']) as never }))?.n).toBe('takes-b');
    await expect(ms.create(widget('takes-c', { slug: 'c' }))).rejects.toMatchObject({ code: 'UniqueViolation' });
    expect(await ms.get('takes-c')).toBeNull();
  });
});
