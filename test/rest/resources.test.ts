/**
 * The generated REST API over a real server, on both stores (docs/API.md §3, §4).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, STORES, startTestGateway, type TestGateway } from '../helpers/gateway.js';

const PERSONS = '/apis/people.example.com/v1alpha1/persons';
const CONTACTS = '/apis/crm.example.net/v1/people';

const person = (name: string, spec: Record<string, unknown> = { name: 'Ada', age: 36 }, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'people.example.com/v1alpha1',
  kind: 'Person',
  metadata: { name, ...extra },
  spec,
});

describe.each(STORES)('REST resources on the %s store', (kind) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(kind);
  });
  afterAll(async () => {
    await gw?.dispose();
  });

  it('creates an object with server-owned metadata, 201 and Location', async () => {
    const res = await call(gw, 'POST', PERSONS, {
      ...person('ada', { name: 'Ada', age: 36, gender: 'FEMALE' }, {
        version: 42,
        creationTimestamp: '2000-01-01T00:00:00Z',
        deletionTimestamp: '2000-01-01T00:00:00Z',
        labels: { 'people.example.com/team': 'math' },
      }),
    });
    expect(res.status).toBe(201);
    expect(res.headers.get('location')).toBe(`${PERSONS}/ada`);
    expect(res.body.metadata.version).toBe(1);
    expect(res.body.metadata.creationTimestamp).not.toBe('2000-01-01T00:00:00Z');
    expect(Date.parse(res.body.metadata.creationTimestamp)).toBeGreaterThan(Date.now() - 60_000);
    expect(res.body.metadata.deletionTimestamp).toBeUndefined();
    expect(res.body.apiVersion).toBe('people.example.com/v1alpha1');
    const got = await call(gw, 'GET', `${PERSONS}/ada`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(res.body);
  });

  it('fills the name from generateName', async () => {
    const res = await call(gw, 'POST', PERSONS, {
      metadata: { generateName: 'gen-' },
      spec: { name: 'Generated' },
    });
    expect(res.status).toBe(201);
    expect(res.body.metadata.name).toMatch(/^gen-[a-z0-9]{5}$/);
  });

  it('refuses a duplicate name with 409', async () => {
    await call(gw, 'POST', PERSONS, person('dup'));
    const res = await call(gw, 'POST', PERSONS, person('dup', { name: 'Other' }));
    expect(res.status).toBe(409);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    expect((await call(gw, 'GET', `${PERSONS}/dup`)).body.spec.name).toBe('Ada');
  });

  it('lists every schema violation with 422 and stores nothing', async () => {
    const res = await call(
      gw,
      'POST',
      PERSONS,
      person('bad-schema', {
        name: 'x'.repeat(101),
        age: 151,
        gender: 'OTHER',
        otherPerson: { spec: { age: -1 } },
      }),
    );
    expect(res.status).toBe(422);
    const fields = res.body.errors.map((e: { field: string }) => e.field).sort();
    expect(fields).toEqual(['spec.age', 'spec.gender', 'spec.name', 'spec.otherPerson.spec.age']);
    expect(res.body).toMatchObject({ status: 422, title: expect.any(String), detail: expect.any(String), instance: PERSONS });
    expect((await call(gw, 'GET', `${PERSONS}/bad-schema`)).status).toBe(404);
  });

  it('requires spec (422)', async () => {
    const res = await call(gw, 'POST', PERSONS, { metadata: { name: 'nospec' } });
    expect(res.status).toBe(422);
    expect(res.body.errors).toContainEqual({ field: 'spec', message: 'is required' });
  });

  it('rejects bad names and labels with 422 listing each field', async () => {
    for (const name of ['Upper', '-dash', 'dash-', 'a_b', 'x'.repeat(254)]) {
      const res = await call(gw, 'POST', PERSONS, person(name));
      expect(res.status, name).toBe(422);
      expect(res.body.errors[0].field).toBe('metadata.name');
    }
    const res = await call(
      gw,
      'POST',
      PERSONS,
      person('labels', undefined, { labels: { 'bad key!': 'v', 'ok.example.com/k': 'bad value!', ['x'.repeat(64)]: 'v' } }),
    );
    expect(res.status).toBe(422);
    expect(res.body.errors).toHaveLength(3);
    expect((await call(gw, 'GET', `${PERSONS}/labels`)).status).toBe(404);
    const noName = await call(gw, 'POST', PERSONS, { spec: { name: 'x' } });
    expect(noName.status).toBe(422);
  });

  it('updates with the stored version; a stale version gets 409 and changes nothing', async () => {
    const created = (await call(gw, 'POST', PERSONS, person('lock'))).body;
    const ok = await call(gw, 'PUT', `${PERSONS}/lock`, { ...created, spec: { name: 'Ada L.', age: 37 } });
    expect(ok.status).toBe(200);
    expect(ok.body.metadata.version).toBe(2);
    expect(ok.body.metadata.creationTimestamp).toBe(created.metadata.creationTimestamp);
    const stale = await call(gw, 'PUT', `${PERSONS}/lock`, { ...created, spec: { name: 'Stale', age: 1 } });
    expect(stale.status).toBe(409);
    const now = await call(gw, 'GET', `${PERSONS}/lock`);
    expect(now.body.spec).toEqual({ name: 'Ada L.', age: 37 });
    expect(now.body.metadata.version).toBe(2);
  });

  it('PUT without a version is 422, with a different name is 400', async () => {
    await call(gw, 'POST', PERSONS, person('putcheck'));
    const noVersion = await call(gw, 'PUT', `${PERSONS}/putcheck`, person('putcheck'));
    expect(noVersion.status).toBe(422);
    expect(noVersion.body.errors[0].field).toBe('metadata.version');
    const mismatch = await call(gw, 'PUT', `${PERSONS}/putcheck`, person('other', undefined, { version: 1 }));
    expect(mismatch.status).toBe(400);
    const missing = await call(gw, 'PUT', `${PERSONS}/nobody`, person('nobody', undefined, { version: 1 }));
    expect(missing.status).toBe(404);
  });

  it('merge-patches and JSON-patches; a conditional patch with a stale version is 409', async () => {
    await call(gw, 'POST', PERSONS, person('patchy', { name: 'P', age: 10, gender: 'MALE' }));
    const merge = await call(gw, 'PATCH', `${PERSONS}/patchy`, { spec: { age: 11, gender: null } }, {
      'content-type': 'application/merge-patch+json',
    });
    expect(merge.status).toBe(200);
    expect(merge.body.spec).toEqual({ name: 'P', age: 11 });
    expect(merge.body.metadata.version).toBe(2);
    const json = await call(gw, 'PATCH', `${PERSONS}/patchy`, [{ op: 'replace', path: '/spec/age', value: 12 }], {
      'content-type': 'application/json-patch+json',
    });
    expect(json.status).toBe(200);
    expect(json.body.spec.age).toBe(12);
    const stale = await call(gw, 'PATCH', `${PERSONS}/patchy`, { metadata: { version: 1 }, spec: { age: 99 } }, {
      'content-type': 'application/merge-patch+json',
    });
    expect(stale.status).toBe(409);
    const invalid = await call(gw, 'PATCH', `${PERSONS}/patchy`, { spec: { age: 200 } }, {
      'content-type': 'application/merge-patch+json',
    });
    expect(invalid.status).toBe(422);
    const wrongType = await call(gw, 'PATCH', `${PERSONS}/patchy`, { spec: { age: 1 } });
    expect(wrongType.status).toBe(415);
    const badOp = await call(gw, 'PATCH', `${PERSONS}/patchy`, [{ op: 'frobnicate', path: '/spec' }], {
      'content-type': 'application/json-patch+json',
    });
    expect(badOp.status).toBe(400);
    expect((await call(gw, 'GET', `${PERSONS}/patchy`)).body.spec.age).toBe(12);
  });

  it('answers malformed JSON with 400 and wrong media types with 415', async () => {
    const bad = await call(gw, 'POST', PERSONS, '{"metadata":', { 'content-type': 'application/json' });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).not.toMatch(/\n\s+at /);
    const xml = await call(gw, 'POST', PERSONS, '<person/>', { 'content-type': 'application/xml' });
    expect(xml.status).toBe(415);
    const mismatch = await call(gw, 'POST', PERSONS, { apiVersion: 'other.example.com/v1', kind: 'Person', metadata: { name: 'x' }, spec: {} });
    expect(mismatch.status).toBe(400);
  });

  it('keeps a unique index unique (409, nothing stored)', async () => {
    const a = await call(gw, 'POST', CONTACTS, { metadata: { name: 'c1' }, spec: { email: 'a@example.com', tags: ['x'] } });
    expect(a.status).toBe(201);
    const b = await call(gw, 'POST', CONTACTS, { metadata: { name: 'c2' }, spec: { email: 'a@example.com' } });
    expect(b.status).toBe(409);
    expect((await call(gw, 'GET', `${CONTACTS}/c2`)).status).toBe(404);
    const c = await call(gw, 'POST', CONTACTS, { metadata: { name: 'c3' }, spec: { email: 'c@example.com' } });
    const taken = await call(gw, 'PUT', `${CONTACTS}/c3`, { ...c.body, spec: { email: 'a@example.com' } });
    expect(taken.status).toBe(409);
    expect((await call(gw, 'GET', `${CONTACTS}/c3`)).body.spec.email).toBe('c@example.com');
  });

  it('holds an object with finalizers in a readable deleting state until the last is removed', async () => {
    await call(gw, 'POST', PERSONS, person('fin', undefined, { finalizers: ['people.example.com/a', 'people.example.com/b'] }));
    const del = await call(gw, 'DELETE', `${PERSONS}/fin`);
    expect(del.status).toBe(200);
    expect(del.body.metadata.deletionTimestamp).toBeTruthy();
    const still = await call(gw, 'GET', `${PERSONS}/fin`);
    expect(still.status).toBe(200);
    expect(still.body.metadata.deletionTimestamp).toBe(del.body.metadata.deletionTimestamp);
    const listed = await call(gw, 'GET', `${PERSONS}?fieldSelector=name=fin`);
    expect(listed.body.items).toHaveLength(1);
    const addFinalizer = await call(gw, 'PATCH', `${PERSONS}/fin`, { metadata: { finalizers: ['people.example.com/a', 'people.example.com/b', 'people.example.com/c'] } }, {
      'content-type': 'application/merge-patch+json',
    });
    expect(addFinalizer.status).toBe(422);
    const recreate = await call(gw, 'POST', PERSONS, person('fin'));
    expect(recreate.status).toBe(409);
    const one = await call(gw, 'PATCH', `${PERSONS}/fin`, { metadata: { finalizers: ['people.example.com/b'] } }, {
      'content-type': 'application/merge-patch+json',
    });
    expect(one.status).toBe(200);
    expect((await call(gw, 'GET', `${PERSONS}/fin`)).status).toBe(200);
    const last = await call(gw, 'PATCH', `${PERSONS}/fin`, [{ op: 'remove', path: '/metadata/finalizers' }], {
      'content-type': 'application/json-patch+json',
    });
    expect(last.status).toBe(200);
    expect((await call(gw, 'GET', `${PERSONS}/fin`)).status).toBe(404);
  });

  it('deletes an object without finalizers at once and answers with it', async () => {
    await call(gw, 'POST', PERSONS, person('gone'));
    const del = await call(gw, 'DELETE', `${PERSONS}/gone`);
    expect(del.status).toBe(200);
    expect(del.body.metadata.deletionTimestamp).toBeTruthy();
    expect((await call(gw, 'GET', `${PERSONS}/gone`)).status).toBe(404);
    expect((await call(gw, 'DELETE', `${PERSONS}/gone`)).status).toBe(404);
  });

  it('serves /status: only status changes there, and PUT/PATCH on the object keep status', async () => {
    const created = (await call(gw, 'POST', PERSONS, person('stat'))).body;
    const put = await call(gw, 'PUT', `${PERSONS}/stat/status`, { ...created, spec: { name: 'ignored' }, status: { phase: 'Ready' } });
    expect(put.status).toBe(200);
    expect(put.body.status).toEqual({ phase: 'Ready' });
    expect(put.body.spec.name).toBe('Ada');
    const objPut = await call(gw, 'PUT', `${PERSONS}/stat`, { ...put.body, status: { phase: 'Hacked' }, spec: { name: 'Ada 2' } });
    expect(objPut.status).toBe(200);
    expect(objPut.body.status).toEqual({ phase: 'Ready' });
    const objPatch = await call(gw, 'PATCH', `${PERSONS}/stat`, { status: { phase: 'Hacked' } }, {
      'content-type': 'application/merge-patch+json',
    });
    expect(objPatch.body.status).toEqual({ phase: 'Ready' });
    const statusPatch = await call(gw, 'PATCH', `${PERSONS}/stat/status`, { status: { phase: 'Done' }, spec: { name: 'no' } }, {
      'content-type': 'application/merge-patch+json',
    });
    expect(statusPatch.status).toBe(200);
    expect(statusPatch.body.status).toEqual({ phase: 'Done' });
    expect(statusPatch.body.spec.name).toBe('Ada 2');
    const stale = await call(gw, 'PUT', `${PERSONS}/stat/status`, { ...created, status: { phase: 'Old' } });
    expect(stale.status).toBe(409);
    expect((await call(gw, 'GET', `${PERSONS}/stat/status`)).body.status).toEqual({ phase: 'Done' });
  });

  it('lists with the ListResult envelope, paging and the default sort', async () => {
    for (const n of ['list-a', 'list-b', 'list-c']) {
      await call(gw, 'POST', PERSONS, person(n, undefined, { labels: { 'people.example.com/set': 'paging' } }));
    }
    const all = await call(gw, 'GET', `${PERSONS}?labelSelector=people.example.com/set=paging`);
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ total: 3, page: 1, first: true, last: true, hasNext: false, hasPrevious: false });
    expect(typeof all.body.resourceVersion).toBe('string');
    // newest first
    expect(all.body.items.map((o: any) => o.metadata.name)).toEqual(['list-c', 'list-b', 'list-a']);
    const page2 = await call(gw, 'GET', `${PERSONS}?labelSelector=people.example.com/set=paging&size=2&page=2`);
    expect(page2.body).toMatchObject({ page: 2, size: 2, total: 3, totalPages: 2, first: false, last: true, hasNext: false, hasPrevious: true });
    expect(page2.body.items.map((o: any) => o.metadata.name)).toEqual(['list-a']);
    const byName = await call(gw, 'GET', `${PERSONS}?labelSelector=people.example.com/set=paging&sort=metadata.name,asc`);
    expect(byName.body.items.map((o: any) => o.metadata.name)).toEqual(['list-a', 'list-b', 'list-c']);
  });

  it('rejects bad selectors, non-indexed fields and bad paging with 400', async () => {
    for (const q of ['fieldSelector=spec.age=3', 'sort=spec.age,asc', 'labelSelector=a%3D%3D%3Db', 'page=0&size=1', 'size=abc', 'sort=spec.name,sideways']) {
      const res = await call(gw, 'GET', `${PERSONS}?${q}`);
      expect(res.status, q).toBe(400);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
    }
  });

  it('deletes a collection by selector and returns what it deleted', async () => {
    for (const n of ['dc-1', 'dc-2', 'dc-keep']) {
      await call(gw, 'POST', PERSONS, person(n, undefined, { labels: { 'people.example.com/dc': n === 'dc-keep' ? 'keep' : 'drop' } }));
    }
    const res = await call(gw, 'DELETE', `${PERSONS}?labelSelector=people.example.com/dc=drop`);
    expect(res.status).toBe(200);
    expect(res.body.items.map((o: any) => o.metadata.name).sort()).toEqual(['dc-1', 'dc-2']);
    expect((await call(gw, 'GET', `${PERSONS}/dc-1`)).status).toBe(404);
    expect((await call(gw, 'GET', `${PERSONS}/dc-keep`)).status).toBe(200);
  });

  it('answers unknown resources 404 and wrong methods 405', async () => {
    expect((await call(gw, 'GET', '/apis/people.example.com/v1alpha1/nothings')).status).toBe(404);
    expect((await call(gw, 'GET', `${PERSONS}/ada/scale`)).status).toBe(404);
    expect((await call(gw, 'GET', '/nowhere')).status).toBe(404);
    const post = await call(gw, 'POST', `${PERSONS}/ada`, person('ada'));
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toContain('PUT');
  });

  it('serves platform kinds under /api/v1alpha1', async () => {
    const res = await call(gw, 'POST', '/api/v1alpha1/roles', {
      apiVersion: 'v1alpha1',
      kind: 'Role',
      metadata: { name: 'viewer' },
      rules: [{ apiGroups: ['people.example.com'], resources: ['persons'], verbs: ['get', 'list'] }],
    });
    expect(res.status).toBe(201);
    expect(res.body.rules[0].verbs).toEqual(['get', 'list']);
    const bad = await call(gw, 'POST', '/api/v1alpha1/roles', { metadata: { name: 'bad' }, rules: [{ resources: ['x'] }] });
    expect(bad.status).toBe(422);
    expect((await call(gw, 'GET', '/api/v1alpha1/roles/viewer')).status).toBe(200);
  });

  it('answers /healthz', async () => {
    const res = await call(gw, 'GET', '/healthz');
    expect(res.status).toBe(200);
  });

  it('rejects wrong credentials with 401', async () => {
    const res = await call(gw, 'GET', PERSONS, undefined, { authorization: `Basic ${Buffer.from('admin:nope').toString('base64')}` });
    expect(res.status).toBe(401);
  });

  it('keeps data across a restart', async () => {
    await call(gw, 'POST', PERSONS, person('durable', { name: 'Durable', age: 1 }));
    gw = await gw.restart();
    const res = await call(gw, 'GET', `${PERSONS}/durable`);
    expect(res.status).toBe(200);
    expect(res.body.spec.name).toBe('Durable');
  });
});
