/**
 * What each part of a stored document costs on FerretDB (issue 20 item 1). The bench's Person
 * objects (bench/lib/dataset.ts, the Person model's indexes) are stored in several variants of
 * the layout, one collection each, and FerretDB's own CPU (from /proc) is measured per:
 *   - insert   one insertOne (the collection carries the physical indexes of the current layout,
 *              indexes.ts, except for the variants marked "no indexes");
 *   - get      findOne({_id}) of a random object: FerretDB 1.24 pushes `{_id: <string>}` down to
 *              SQLite, but its SQL (`_ferretdb_sjson->'$._id' = ?`) does not match the `_id_`
 *              index expression, so SQLite scans the rows, parsing each row's JSON, until the match;
 *   - scan     a filter FerretDB cannot push down (every list): every document is read and decoded.
 * The variants:
 *   layout 1      `{_id, v, g, o: JSON text, f, i, s}` (before CONTRACT §11)
 *   layout 2      the native layout (document.ts) before text indexes: every index's values under `_svc`
 *   current       layout 2 with spec.name and spec.gender served from their fields (text indexes)
 *   no real dup   layout 2 without `_svc.i`/`_svc.s` entries of indexes that have a real path
 *                 (spec.name, spec.gender, metadata.creationTimestamp)
 *   no _svc.i/s   layout 2 without any index values (only v, g, f under `_svc`)
 *   no _svc       the native fields alone
 *   Parse         the document Parse Server stores for the same object (flat fields, dates)
 * Run: FERRETDB_BIN=… npx tsx bench/layout-cost.ts [objects, default 1000]
 */
import { readdirSync, readFileSync } from 'node:fs';
import { MongoClient, type Document } from 'mongodb';
import { startFerretdb } from '../scripts/ferretdb.js';
import { toDoc } from '../src/store/mongo/document.js';
import { physicalIndexes } from '../src/store/mongo/indexes.js';
import { labelIndexValues } from '../src/query/match.js';
import type { ApiObject } from '../src/store/object.js';
import type { StorageModel } from '../src/store/types.js';
import { NAMES, objectName, personBody, teamOf } from './lib/dataset.js';

const N = Number(process.argv[2] ?? 1000);
const GETS = 300;
const SCANS = 10;
/** The Person model as the registry compiles it: spec.name and spec.gender are text indexes (strings). */
const model: StorageModel = {
  key: 'people.example.com/v1alpha1/persons',
  indexes: [
    { name: 'metadata.name', unique: true, order: 'ASC', fingerprint: 'builtin:name' },
    { name: 'metadata.labels', unique: false, order: 'ASC', fingerprint: 'builtin:labels' },
    { name: 'metadata.creationTimestamp', unique: false, order: 'DESC', fingerprint: 'builtin:creationTimestamp' },
    { name: 'metadata.deletionTimestamp', unique: false, order: 'ASC', fingerprint: 'builtin:deletionTimestamp' },
    { name: 'spec.name', unique: false, order: 'ASC', fingerprint: 'path:spec.name|unique=false|order=ASC', path: 'spec.name', text: true },
    { name: 'spec.gender', unique: false, order: 'ASC', fingerprint: 'path:spec.gender|unique=false|order=ASC', path: 'spec.gender', text: true },
  ],
  indexValues: (o) => ({
    'metadata.labels': labelIndexValues(o.metadata.labels),
    'metadata.creationTimestamp': [o.metadata.creationTimestamp!],
    'spec.name': [(o.spec as { name: string }).name],
    'spec.gender': [(o.spec as { gender: string }).gender],
  }),
};
/** The same model before text indexes: every index kept its values under `_svc`. */
const modelBefore: StorageModel = { ...model, indexes: model.indexes.map(({ text: _, ...d }) => d) };
const person = (i: number): ApiObject => {
  const o = personBody(i) as unknown as ApiObject;
  o.metadata.version = 1;
  o.metadata.creationTimestamp = new Date(1_790_000_000_000 + i * 1000).toISOString();
  return o;
};
const layoutTwo = (o: ApiObject): Document => toDoc(modelBefore, o, 'f3a9c1d2e4b5a697', '00000000000000000007');
const current = (o: ApiObject): Document => toDoc(model, o, 'f3a9c1d2e4b5a697', '00000000000000000007');
const withoutIndexValues = (keys?: string[]) => (o: ApiObject): Document => {
  const d = layoutTwo(o);
  for (const k of keys ?? Object.keys(d._svc.i)) {
    delete d._svc.i[k];
    delete d._svc.s[k];
  }
  if (!keys) {
    delete d._svc.i;
    delete d._svc.s;
  }
  return d;
};
const variants: { name: string; doc: (o: ApiObject) => Document; indexes?: StorageModel }[] = [
  {
    name: 'layout 1 (JSON text)',
    doc: (o) => {
      const d = layoutTwo(o);
      return { _id: d._id, v: 1, g: d._svc.g, o: JSON.stringify(o), f: d._svc.f, i: d._svc.i, s: d._svc.s };
    },
  },
  { name: 'layout 2 before text indexes', doc: layoutTwo, indexes: modelBefore },
  { name: 'layout 2 (current: text indexes)', doc: current, indexes: model },
  { name: 'layout 2, no indexes', doc: layoutTwo },
  { name: 'no real-path dup in _svc', doc: withoutIndexValues(['spec%2Ename', 'spec%2Egender', 'metadata%2EcreationTimestamp']) },
  { name: 'no _svc.i/_svc.s', doc: withoutIndexValues() },
  {
    name: 'no _svc',
    doc: (o) => {
      const d = layoutTwo(o);
      delete d._svc;
      return d;
    },
  },
  {
    name: 'Parse Server',
    doc: (o) => {
      const i = Number(o.metadata.name.slice(-6));
      const at = new Date(o.metadata.creationTimestamp!);
      return { _id: o.metadata.name, name: NAMES[i % NAMES.length], age: i % 90, gender: i % 2 ? 'FEMALE' : 'MALE', team: teamOf(i), tier: `tier-${i % 3}`, _created_at: at, _updated_at: at };
    },
  },
];

const db = await startFerretdb({ database: 'layout_cost' });
const port = new URL(db.url).port;
const pid = Number(
  readdirSync('/proc').find((d) => {
    try {
      return /^\d+$/.test(d) && readFileSync(`/proc/${d}/cmdline`, 'utf8').includes(`127.0.0.1:${port}\0`);
    } catch {
      return false;
    }
  }),
);
const tck = 100; // USER_HZ on Linux
const cpuMs = (): number => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / tck;
};
const perOp = async (n: number, fn: (k: number) => Promise<unknown>): Promise<number> => {
  const c0 = cpuMs();
  for (let k = 0; k < n; k++) await fn(k);
  return (cpuMs() - c0) / n;
};

const client = await MongoClient.connect(db.url);
try {
  const rows: string[] = [];
  for (const [n, v] of variants.entries()) {
    const coll = client.db().collection(`v${n}`);
    await client.db().createCollection(`v${n}`);
    if (v.indexes) await coll.createIndexes(physicalIndexes(v.indexes));
    const docs = Array.from({ length: N }, (_, i) => v.doc(person(i)));
    const insert = await perOp(N, (k) => coll.insertOne(docs[k]!));
    let x = 12345;
    const get = await perOp(GETS, () => {
      x = (x * 1103515245 + 12345) % 2 ** 31;
      return coll.findOne({ _id: objectName(x % N) as never });
    });
    const scan = await perOp(SCANS, () => coll.find({ 'nowhere.x': 'none' }).toArray());
    const bytes = JSON.stringify(docs[7]).length;
    rows.push(`| ${v.name} | ${bytes} | ${insert.toFixed(2)} | ${get.toFixed(2)} | ${scan.toFixed(0)} |`);
    console.log(rows.at(-1));
  }
  console.log(`\n${N} objects; FerretDB CPU ms per operation (from /proc)\n`);
  console.log('| variant | JSON bytes of one document | insert | get by _id | scan (every list) |\n|---|---:|---:|---:|---:|');
  console.log(rows.join('\n'));
} finally {
  await client.close();
  await db.stop();
}
