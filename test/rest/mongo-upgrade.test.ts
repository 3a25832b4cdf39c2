/**
 * A MongoDB database written by the previous document layout (JSON text in `o`; written here
 * with the previous encoder, test/store/fixtures/layout-v1.ts, from the objects the gateway
 * served) is upgraded on the gateway's next start: every object of every model (platform kinds
 * included) reads back the same via REST, unique values still hold, and a watch resumes from a
 * position taken before the upgrade.
 */
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { openWatch, PERSONS } from '../watch/helpers.js';
import type { StoredDoc } from '../../src/store/mongo/document.js';
import { fromDoc } from '../../src/store/mongo/document.js';
import { writeLayoutOne } from '../store/fixtures/layout-v1.js';

const auth = { authorization: adminAuth };
const CRM = '/apis/crm.example.net/v1/people';

describe('upgrade of a MongoDB database written by the previous layout, seen through REST', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway('mongodb');
  }, 120_000);
  afterAll(() => gw?.dispose());

  it('serves every object unchanged after the first start of the new version', async () => {
    for (let i = 0; i < 12; i++) {
      const body = {
        metadata: { name: `p${i}`, labels: { 'people.example.com/team': `t${i % 3}` }, annotations: { 'example.com/note': 'a.b' } },
        spec: { name: `Person ${i}`, age: 20 + i, gender: i % 2 ? 'MALE' : 'FEMALE', free: { 'a.b': { $c: [i, [i]], '': '%' } } },
      };
      expect((await call(gw, 'POST', PERSONS, body, auth)).status).toBe(201);
      expect((await call(gw, 'POST', CRM, { metadata: { name: `c${i}` }, spec: { email: `c${i}@x.org`, tags: ['a', `t${i}`] } }, auth)).status).toBe(201);
    }
    const position = (await call(gw, 'GET', PERSONS, undefined, auth)).body.resourceVersion as string;
    expect((await call(gw, 'PATCH', `${PERSONS}/p1`, { spec: { age: 99 } }, { ...auth, 'content-type': 'application/merge-patch+json' })).status).toBe(200);
    const before = {
      persons: (await call(gw, 'GET', `${PERSONS}?sort=metadata.name,asc`, undefined, auth)).body.items,
      crm: (await call(gw, 'GET', `${CRM}?sort=metadata.name,asc`, undefined, auth)).body.items,
    };
    await gw.close();

    // Every model collection back to layout 1, as the previous version would have left it.
    const client = await MongoClient.connect(gw.mongodbUrl!);
    let converted = 0;
    try {
      const db = client.db();
      const models = await db.collection('_svc_models').find({ _id: { $not: /^#/ } as never }).toArray();
      for (const m of models) {
        const coll = `ext.${(m._id as unknown as string).split('/').map((p, i) => (i === 0 && p === '' ? 'core' : p)).join('.')}`;
        const docs = await db.collection<StoredDoc>(coll).find().toArray();
        await writeLayoutOne(db, coll, m._id as unknown as string, docs.map((d) => ({ obj: fromDoc(d), g: d._svc.g, f: d._svc.f, i: d._svc.i, s: d._svc.s as Record<string, string> })));
        converted += docs.length;
      }
      expect(await db.collection('ext.people.example.com.v1alpha1.persons').countDocuments({ o: { $exists: true } })).toBe(12);
    } finally {
      await client.close();
    }
    expect(converted).toBeGreaterThan(24); // platform objects (users, roles, plugins) too

    gw = await startTestGateway('mongodb', { dataDir: gw.dataDir, mongodbUrl: gw.mongodbUrl });
    expect((await call(gw, 'GET', `${PERSONS}?sort=metadata.name,asc`, undefined, auth)).body.items).toEqual(before.persons);
    expect((await call(gw, 'GET', `${CRM}?sort=metadata.name,asc`, undefined, auth)).body.items).toEqual(before.crm);
    for (const p of before.persons) expect((await call(gw, 'GET', `${PERSONS}/${p.metadata.name}`, undefined, auth)).body).toEqual(p);
    // Selectors over the carried-over index values, and the admin can still log in (users).
    const team = await call(gw, 'GET', `${PERSONS}?labelSelector=people.example.com/team=t1&sort=metadata.name,asc`, undefined, auth);
    expect(team.body.items.map((o: any) => o.metadata.name)).toEqual(['p1', 'p10', 'p4', 'p7']);
    // Unique values still hold.
    expect((await call(gw, 'POST', CRM, { metadata: { name: 'dup' }, spec: { email: 'c3@x.org' } }, auth)).status).toBe(409);
    // The documents are native now.
    const c2 = await MongoClient.connect(gw.mongodbUrl!);
    try {
      const older = await c2.db().collection('ext.people.example.com.v1alpha1.persons').find({ 'spec.age': { $gt: 30 } }).toArray();
      expect(older.map((d) => d._id).sort()).toEqual(['p1', 'p11']);
    } finally {
      await c2.close();
    }
    // A watch resumes from a position taken before the upgrade.
    const w = openWatch(gw, `?resourceVersion=${position}`);
    await w.opened;
    const events = await w.until((ev) => ev.some((e) => e.type === 'MODIFIED'), 'the patch of p1');
    expect(events.find((e) => e.type === 'MODIFIED').object).toEqual(before.persons.find((p: any) => p.metadata.name === 'p1'));
    w.ws.close();
  }, 180_000);
});
