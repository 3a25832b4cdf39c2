/**
 * The MongoDB document layout (docs/API.md §11) as the database's own tools see it, and the
 * in-place upgrade of a database written by the previous layout (JSON text in `o`,
 * test/store/fixtures/layout-v1.ts): nothing lost, duplicated or changed, unique values and
 * watch positions kept, resumable after a kill halfway, two gateways at once.
 */
import { randomBytes } from 'node:crypto';
import { MongoClient, type Db } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { BASE, expectStoreError, makeModel, query, until, widget } from './contract.js';
import { createMongoStore } from '../../src/store/mongo/index.js';
import { collectionNames, fromDoc, toDoc, type StoredDoc } from '../../src/store/mongo/document.js';
import { layoutMarkerId, upgradeLayout } from '../../src/store/mongo/layout.js';
import { writeLayoutOne } from './fixtures/layout-v1.js';
import type { ChangeEvent, Store, StorageModel } from '../../src/store/types.js';
import type { ApiObject } from '../../src/store/object.js';

const url = inject('mongodbUrl');

/** Keys FerretDB refuses or MongoDB treats specially, at several depths and in arrays. */
const awkward = {
  'a.b': 1,
  $dollar: true,
  'mid$dle': 'x',
  '%': '%25 literal',
  '%2E': 'looks escaped',
  '': 'empty key',
  __proto__x: 1,
  nested: { 'x.y': { $z: [1, { '.': 2, '': { '': 3 } }] }, 'ключ': 'ü' },
  list: [{ 'k.k': null }, [1.5, -0.25, 1e21], 'plain', [[[]], { '%[]': 'literal' }]],
};

function richWidget(name: string, age: number): ApiObject {
  return {
    apiVersion: 'test.example.com/v1',
    kind: 'Widget',
    metadata: {
      name,
      version: 1,
      creationTimestamp: '2026-01-02T03:04:05.678Z',
      finalizers: ['example.com/hold'],
      labels: { 'app.kubernetes.io/name': 'w', tier: '' },
      annotations: { 'example.com/$note': 'a.b', 'x%y': '' },
    },
    spec: { slug: name, age, ok: age > 30, tags: ['t1', 't2'], free: awkward },
    status: { phase: 'Ready', 'count.of': 3 },
  };
}

describe('mongodb layout', () => {
  const database = `svc_t_${randomBytes(5).toString('hex')}`;
  let client: MongoClient;
  let db: Db;
  const stores: Store[] = [];
  const open = async () => {
    const s = await createMongoStore({ url, database });
    stores.push(s);
    return s;
  };
  beforeAll(async () => {
    client = new MongoClient(url, { serverSelectionTimeoutMS: 5000 });
    db = client.db(database);
  });
  afterAll(async () => {
    for (const s of stores) await s.close();
    await db?.dropDatabase();
    await client?.close();
  });

  it('stores native documents: typed spec/status, escaped keys, dates, {k, v} labels, gateway fields under _svc', async () => {
    const model = makeModel(BASE, `layout.example.com/v1/widgets-${randomBytes(3).toString('hex')}`);
    const ms = await (await open()).model(model);
    const objs = [richWidget('w-young', 20), richWidget('w-old', 40), richWidget('w-older', 77)];
    for (const o of objs) await ms.create(o);
    // A timestamp a BSON Date cannot print back (no milliseconds) and one with microseconds.
    const odd = { ...richWidget('w-odd', 31), metadata: { ...richWidget('w-odd', 31).metadata, creationTimestamp: '2024-01-01T00:00:00Z' } };
    const micro = { ...richWidget('w-micro', 5), metadata: { ...richWidget('w-micro', 5).metadata, creationTimestamp: '2024-01-01T00:00:00.123456Z' } };
    await ms.create(odd);
    await ms.create(micro);
    const all = [...objs, odd, micro];

    const coll = db.collection(collectionNames(model.key).objects);
    const raw = await coll.findOne({ _id: 'w-old' as never });
    expect(raw).toMatchObject({
      _id: 'w-old',
      apiVersion: 'test.example.com/v1',
      kind: 'Widget',
      metadata: {
        name: 'w-old',
        version: 1,
        creationTimestamp: new Date('2026-01-02T03:04:05.678Z'),
        finalizers: ['example.com/hold'],
        labels: [
          { k: 'app.kubernetes.io/name', v: 'w' },
          { k: 'tier', v: '' },
        ],
        annotations: [
          { k: 'example.com/$note', v: 'a.b' },
          { k: 'x%y', v: '' },
        ],
      },
      spec: {
        slug: 'w-old',
        age: 40,
        ok: true,
        tags: ['t1', 't2'],
        free: {
          'a%2Eb': 1,
          '%24dollar': true,
          'mid$dle': 'x',
          '%25': '%25 literal',
          '%252E': 'looks escaped',
          '%': 'empty key',
          nested: { 'x%2Ey': { '%24z': [1, { '%2E': 2, '%': { '%': 3 } }] }, 'ключ': 'ü' },
          // An array inside an array is wrapped (FerretDB refuses nested arrays).
          list: [{ 'k%2Ek': null }, { '%[]': [1.5, -0.25, 1e21] }, 'plain', { '%[]': [{ '%[]': [{ '%[]': [] }] }, { '%25[]': 'literal' }] }],
        },
      },
      status: { phase: 'Ready', 'count%2Eof': 3 },
      _svc: { v: 1, g: expect.any(String), f: expect.any(String), i: expect.any(Object), s: expect.any(Object) },
    });
    expect(raw!.metadata.creationTimestamp).toBeInstanceOf(Date);
    expect(raw!.o).toBeUndefined();
    expect(raw!._svc.t).toBeUndefined();
    expect(raw!._svc.j).toBeUndefined();
    expect((await coll.findOne({ _id: 'w-odd' as never }))!._svc.t).toEqual({ c: '2024-01-01T00:00:00Z' });

    // The query of docs/API.md §11 returns exactly the matching objects.
    const older = await coll.find({ 'spec.age': { $gt: 30 } }).sort({ _id: 1 }).toArray();
    expect(older.map((d) => d._id)).toEqual(['w-odd', 'w-old', 'w-older']);
    // (FerretDB 1.24 matches neither $elemMatch nor a whole pair inside an array; dotted paths into it work.)
    expect(await coll.countDocuments({ 'metadata.labels.k': 'tier' })).toBe(5);
    expect(await coll.countDocuments({ 'metadata.creationTimestamp': { $gt: new Date('2025-01-01') } })).toBe(3);

    // Every object comes back exactly as written, by get and by list.
    for (const o of all) expect(await ms.get(o.metadata.name)).toStrictEqual(o);
    const listed = await ms.list(query());
    expect(listed.items.map((o) => JSON.stringify(o)).sort()).toEqual(all.map((o) => JSON.stringify(o)).sort());
    // Updates and deletes keep working on the native form.
    const v2 = { ...objs[0]!, metadata: { ...objs[0]!.metadata, version: 2 }, spec: { ...(objs[0]!.spec as object), age: 50 } };
    await ms.update(v2, 1);
    expect(await ms.get('w-young')).toStrictEqual(v2);
    expect((await coll.find({ 'spec.age': { $gt: 30 } }).toArray()).length).toBe(4);
  });

  it('keeps the JSON text beside the native form only where the native form would lose something', async () => {
    const model = makeModel(BASE, `layout.example.com/v1/lossy-${randomBytes(3).toString('hex')}`);
    const ms = await (await open()).model(model);
    let deep: unknown = 'bottom';
    for (let i = 0; i < 120; i++) deep = { d: deep };
    const cases: ApiObject[] = [
      { ...widget('lone-surrogate', { slug: 'ls' }), status: { text: 'a\ud800b', ['\udc00k']: 1 } },
      { ...widget('too-deep', { slug: 'td' }), status: { deep } },
      { ...widget('proto', { slug: 'pr' }), status: JSON.parse('{"__proto__": {"x": 1}, "y": 2}') },
    ];
    for (const o of cases) await ms.create(o);
    for (const o of cases) expect(JSON.stringify(await ms.get(o.metadata.name))).toBe(JSON.stringify(o));
    const coll = db.collection(collectionNames(model.key).objects);
    expect((await coll.findOne({ _id: 'lone-surrogate' as never }))!._svc.j).toBeTypeOf('string');
    expect((await coll.findOne({ _id: 'too-deep' as never }))!._svc.j).toBeTypeOf('string');
    expect((await coll.findOne({ _id: 'proto' as never }))!._svc.j).toBeUndefined();
  });

  it('turns path indexes into indexes on the native field, used by the database for such queries', async () => {
    const model = makeModel(BASE, `layout.example.com/v1/paths-${randomBytes(3).toString('hex')}`);
    await (await open()).model(model);
    const keys = (await db.collection(collectionNames(model.key).objects).indexes()).filter((ix) => ix.name!.startsWith('p:')).map((ix) => ix.key);
    expect(keys).toEqual(
      expect.arrayContaining([{ 'spec.slug': 1 }, { 'spec.tags': 1 }, { 'spec.codes': 1 }, { 'spec.color': 1 }, { 'metadata.creationTimestamp': -1 }]),
    );
  });

  describe('upgrade of a database written by the previous layout', () => {
    /** Objects with awkward keys, unique values and labels; some updated, one deleted. */
    async function seed(model: StorageModel, n: number): Promise<{ objects: ApiObject[]; position: string }> {
      const store = await open();
      const ms = await store.model(model);
      const objects: ApiObject[] = [];
      for (let i = 0; i < n; i++) {
        const o = richWidget(`obj-${String(i).padStart(3, '0')}`, i);
        (o.spec as Record<string, unknown>).codes = [`c${i}`];
        objects.push(await ms.create(o));
      }
      const position = await ms.resourceVersion();
      const u = { ...objects[1]!, metadata: { ...objects[1]!.metadata, version: 2 }, spec: { ...(objects[1]!.spec as object), slug: 'renamed' } };
      objects[1] = await ms.update(u, 1);
      await ms.remove(objects[2]!.metadata.name, 1);
      objects.splice(2, 1);
      return { objects, position };
    }

    /** Rewrites the model's collection in layout 1, from what the current layout holds. */
    async function downgrade(model: StorageModel, objects: ApiObject[]): Promise<void> {
      const coll = db.collection<StoredDoc>(collectionNames(model.key).objects);
      const raw = new Map((await coll.find().toArray()).map((d) => [d._id, d]));
      expect(raw.size).toBe(objects.length);
      await writeLayoutOne(
        db,
        collectionNames(model.key).objects,
        model.key,
        objects.map((obj) => {
          const d = raw.get(obj.metadata.name)!;
          return { obj, g: d._svc.g, f: d._svc.f, i: d._svc.i, s: d._svc.s as Record<string, string> };
        }),
      );
      const one = await coll.findOne({});
      expect(one).toHaveProperty('o');
      expect(one).not.toHaveProperty('_svc');
    }

    async function expectUpgraded(model: StorageModel, store: Store, objects: ApiObject[], position: string): Promise<void> {
      const ms = await store.model(model);
      const coll = db.collection(collectionNames(model.key).objects);
      expect(await coll.countDocuments({})).toBe(objects.length);
      expect(await coll.countDocuments({ _svc: { $exists: false } })).toBe(0);
      expect(await coll.countDocuments({ o: { $exists: true } })).toBe(0);
      for (const o of objects) expect(await ms.get(o.metadata.name)).toStrictEqual(o);
      const listed = await ms.list(query([], [{ index: 'spec.slug', direction: 'asc' }]));
      expect(listed.total).toBe(objects.length);
      expect(listed.items).toStrictEqual([...objects].sort((a, b) => ((a.spec as any).slug < (b.spec as any).slug ? -1 : 1)));
      // Indexes on the new paths only.
      const keys = (await coll.indexes()).flatMap((ix) => Object.keys(ix.key));
      expect(keys.filter((k) => /^[is]\./.test(k))).toEqual([]);
      expect(keys).toContain('_svc.i.spec%2Eslug');
      expect(await db.collection('_svc_models').findOne({ _id: layoutMarkerId(model.key) as never })).toMatchObject({ layout: 2 });
      // Unique values are still held: by the objects that have them, and only by them.
      await expectStoreError(ms.create(richWidget('thief', 1) && { ...richWidget('thief', 1), spec: { slug: 'renamed' } }), 'UniqueViolation', 'spec.slug');
      await expectStoreError(ms.create({ ...richWidget('thief2', 1), spec: { slug: 'x', codes: ['c0'] } }), 'UniqueViolation', 'spec.codes');
      await ms.create({ ...richWidget('taker', 1), spec: { slug: 'obj-001' } }); // released by the rename before the upgrade
      await ms.remove('taker', 1);
      // Watch positions: resuming from a position before the upgrade replays what followed it.
      const got: ChangeEvent[] = [];
      const unsub = await ms.watch(position, (e) => got.push(e));
      await until(() => got.length >= 3, 20_000);
      unsub();
      expect(got.slice(0, 2).map((e) => `${e.type} ${e.object.metadata.name}`)).toEqual(['MODIFIED obj-001', 'DELETED obj-002']);
      expect(got[0]!.object).toStrictEqual(objects[1]);
      // Writes after the upgrade.
      const o0 = objects[0]!;
      const next = await ms.update({ ...o0, metadata: { ...o0.metadata, version: 2 }, spec: { ...(o0.spec as object), age: 99 } }, 1);
      expect(await ms.get(o0.metadata.name)).toStrictEqual(next);
    }

    it('converts every document on the first start; nothing lost, duplicated or changed', async () => {
      const model = makeModel(BASE, `upgrade.example.com/v1/widgets-${randomBytes(3).toString('hex')}`);
      const { objects, position } = await seed(model, 30);
      await downgrade(model, objects);
      await expectUpgraded(model, await open(), objects, position);
    });

    it('resumes after a gateway killed halfway', async () => {
      const model = makeModel(BASE, `upgrade.example.com/v1/killed-${randomBytes(3).toString('hex')}`);
      const { objects, position } = await seed(model, 25);
      await downgrade(model, objects);
      const coll = db.collection<StoredDoc>(collectionNames(model.key).objects);
      const killed = new Error('killed');
      await expect(
        upgradeLayout(coll, db.collection('_svc_models'), model.key, {
          batchSize: 10,
          afterBatch: () => {
            throw killed;
          },
        }),
      ).rejects.toBe(killed);
      expect(await coll.countDocuments({ _svc: { $exists: true } })).toBe(10);
      expect(await coll.countDocuments({ _svc: { $exists: false } })).toBe(14);
      expect(await db.collection('_svc_models').findOne({ _id: layoutMarkerId(model.key) as never })).toBeNull();
      await expectUpgraded(model, await open(), objects, position);
    });

    it('two gateways starting at once upgrade it once', async () => {
      const model = makeModel(BASE, `upgrade.example.com/v1/twice-${randomBytes(3).toString('hex')}`);
      const { objects, position } = await seed(model, 40);
      await downgrade(model, objects);
      const [a, b] = await Promise.all([open(), open()]);
      const [ma, mb] = await Promise.all([a.model(model), b.model(model)]);
      for (const o of objects) {
        expect(await ma.get(o.metadata.name)).toStrictEqual(o);
        expect(await mb.get(o.metadata.name)).toStrictEqual(o);
      }
      await expectUpgraded(model, a, objects, position);
    });
  });

  it('decodes what other tools wrote: dates and other BSON types inside spec become JSON', () => {
    const model = makeModel(BASE, 'x.example.com/v1/w');
    const doc = toDoc(model, widget('t', { slug: 's' }), 'g');
    (doc.spec as Record<string, unknown>).when = new Date('2025-05-05T05:05:05.000Z');
    expect((fromDoc(doc).spec as Record<string, unknown>).when).toBe('2025-05-05T05:05:05.000Z');
  });
});
