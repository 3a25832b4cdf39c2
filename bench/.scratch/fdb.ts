import { MongoClient } from 'mongodb';
import { startFerretdb } from '../../scripts/ferretdb.js';
const fdb = await startFerretdb({ database: 'x' });
const c = new MongoClient(fdb.url);
try {
  const col = c.db().collection<any>('ext.a.b');
  await col.createIndex({ 'i.n': 1 }, { name: 'f' });
  const N = Number(process.argv[2] ?? 2000);
  for (let b = 0; b < N; b += 500) {
    await col.insertMany(Array.from({ length: Math.min(500, N - b) }, (_, j) => ({ _id: `p-${b + j}`, v: 1, o: JSON.stringify({ x: 'y'.repeat(300) }), i: { n: [`n${(b + j) % 25}`], 'metadata%2Elabels': ['a', `a=${(b + j) % 10}`] }, s: { n: `n${(b + j) % 25}` } })));
  }
  const time = async (label: string, fn: () => Promise<unknown>, n = 50) => {
    const t = performance.now();
    for (let i = 0; i < n; i++) await fn();
    console.log(label, ((performance.now() - t) / n).toFixed(2), 'ms');
  };
  await time('findOne _id', () => col.findOne({ _id: 'p-17' }, { projection: { o: 1 } }));
  await time('findOne _id no proj', () => col.findOne({ _id: 'p-17' }));
  await time('find i.n', () => col.find({ 'i.n': { $in: ['n3'] } }, { projection: { o: 1 } }).sort({ 's.n': 1, _id: 1 }).limit(20).toArray(), 10);
  await time('count i.n', () => col.countDocuments({ 'i.n': { $in: ['n3'] } }), 10);
  console.log(JSON.stringify(await col.find({ _id: 'p-17' }).explain(), null, 1).slice(0, 1500));
  console.log(JSON.stringify(await col.find({ 'i.n': { $in: ['n3'] } }).sort({ 's.n': 1, _id: 1 }).limit(20).explain(), null, 1).slice(0, 1500));
} finally {
  await c.close();
  await fdb.stop();
}
