/**
 * Rough cost on FerretDB of the two MongoDB document layouts (issue 20 item 1): the same 5,000
 * Person-like objects stored as layout 1 (JSON text in `o`) and as layout 2 (native, document.ts),
 * then get by name and an indexed list (one equality term, default sort, page of 20 + total)
 * timed on each. FerretDB 1.24 scans the collection for every filter but `{_id}`, so this measures
 * the cost per document scanned. Run: FERRETDB_BIN=… npx tsx bench/layout-cost.ts [objects] [KiB of
 * annotation text per object, default 0]
 */
import { MongoClient, type Collection, type Document } from 'mongodb';
import { startFerretdb } from '../scripts/ferretdb.js';
import { toDoc } from '../src/store/mongo/document.js';
import type { ApiObject } from '../src/store/object.js';
import type { StorageModel } from '../src/store/types.js';

const N = Number(process.argv[2] ?? 5000);
const BLOB = 'x'.repeat(Number(process.argv[3] ?? 0) * 1024);
const model: StorageModel = {
  key: 'bench.example.com/v1/persons',
  indexes: [
    { name: 'metadata.name', unique: true, order: 'ASC', fingerprint: 'builtin:name' },
    { name: 'metadata.labels', unique: false, order: 'ASC', fingerprint: 'builtin:labels' },
    { name: 'metadata.creationTimestamp', unique: false, order: 'DESC', fingerprint: 'builtin:creationTimestamp' },
    { name: 'spec.gender', unique: false, order: 'ASC', fingerprint: 'path:spec.gender|unique=false|order=ASC', path: 'spec.gender' },
  ],
  indexValues: (o) => ({
    'metadata.labels': Object.entries(o.metadata.labels ?? {}).flatMap(([k, v]) => [k, `${k}=${v}`]),
    'metadata.creationTimestamp': [o.metadata.creationTimestamp!],
    'spec.gender': [(o.spec as { gender: string }).gender],
  }),
};
const person = (i: number): ApiObject => ({
  apiVersion: 'bench.example.com/v1',
  kind: 'Person',
  metadata: {
    name: `p-${String(i).padStart(6, '0')}`,
    version: 1,
    creationTimestamp: new Date(1_700_000_000_000 + i * 1000).toISOString(),
    labels: { 'bench.example.com/team': `t${i % 10}` },
    ...(BLOB && { annotations: { 'bench.example.com/blob': BLOB } }),
  },
  spec: { name: `Person ${i}`, age: i % 100, gender: i % 2 ? 'MALE' : 'FEMALE', email: `p${i}@example.com`, tags: ['a', 'b'], address: { city: 'X', zip: `${i}` } },
});

function layoutOne(o: ApiObject): Document {
  const d = toDoc(model, o, 'g0000000', '00000000000000000001');
  return { _id: d._id, v: 1, g: d._svc.g, o: JSON.stringify(o), f: d._svc.f, i: d._svc.i, s: d._svc.s };
}

async function time(label: string, runs: number, fn: () => Promise<unknown>): Promise<number> {
  await fn();
  const t0 = performance.now();
  for (let k = 0; k < runs; k++) await fn();
  const ms = (performance.now() - t0) / runs;
  console.log(`${label}: ${ms.toFixed(2)} ms`);
  return ms;
}

const db = await startFerretdb({ database: 'layout_cost' });
const client = await MongoClient.connect(db.url);
try {
  const one = client.db().collection('layout1');
  const two = client.db().collection('layout2');
  const objs = Array.from({ length: N }, (_, i) => person(i));
  const t1 = performance.now();
  for (const o of objs) await one.insertOne(layoutOne(o));
  const t2 = performance.now();
  for (const o of objs) await two.insertOne(toDoc(model, o, 'g0000000', '00000000000000000001') as Document);
  const t3 = performance.now();
  console.log(`insert: layout 1 ${((t2 - t1) / N).toFixed(2)} ms, layout 2 ${((t3 - t2) / N).toFixed(2)} ms`);
  const list = (c: Collection, prefix: string, projection: Document) => async () => {
    const filter = { [`${prefix}i.spec%2Egender`]: { $in: ['MALE'] } };
    await Promise.all([
      c.find(filter, { projection }).sort({ [`${prefix}s.metadata%2EcreationTimestamp`]: -1, _id: 1 }).limit(20).toArray(),
      c.countDocuments(filter),
    ]);
  };
  const r = {
    get1: await time('layout 1 get', 200, () => one.findOne({ _id: 'p-000777' as never }, { projection: { o: 1 } })),
    get2: await time('layout 2 get', 200, () => two.findOne({ _id: 'p-000777' as never }, { projection: { '_svc.i': 0, '_svc.s': 0 } })),
    list1: await time('layout 1 list', 10, list(one, '', { o: 1 })),
    list2: await time('layout 2 list', 10, list(two, '_svc.', { '_svc.i': 0, '_svc.s': 0 })),
  };
  console.log(`${N} objects: get ${(r.get2 / r.get1).toFixed(2)}×, list ${(r.list2 / r.list1).toFixed(2)}× the time of layout 1`);
} finally {
  await client.close();
  await db.stop();
}
