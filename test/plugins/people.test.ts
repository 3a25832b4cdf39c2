/**
 * The people example plugin end to end (both stores): its Plugin object, the Person model and
 * its indexes, the role templates from its bundle (labelled with the plugin's name), and its
 * console API (JSON, a streamed NDJSON export, a streamed NDJSON import).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, call, STORES, startTestGateway, type TestGateway } from '../helpers/gateway.js';

const PERSONS = '/apis/people.example.com/v1alpha1/persons';
const CONSOLE = '/apis/console.api.people.example.com/v1alpha1';
const auth = { authorization: adminAuth };

describe.each(STORES)('people plugin (%s)', (kind) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(kind);
  });
  afterAll(async () => {
    await gw?.dispose();
  });

  it('is STARTED and observable as a Plugin object', async () => {
    const res = await call(gw, 'GET', '/apis/plugin.svc.run/v1alpha1/plugins/people', undefined, auth);
    expect(res.status).toBe(200);
    expect(res.body.spec).toMatchObject({ version: '1.0.0', displayName: 'People', enabled: true });
    expect(res.body.status).toMatchObject({ phase: 'STARTED', version: '1.0.0', platform: false });
    const list = await call(gw, 'GET', '/apis/plugin.svc.run/v1alpha1/plugins?sort=metadata.name,asc', undefined, auth);
    expect(list.body.items.map((p: any) => p.metadata.name)).toEqual(expect.arrayContaining(['content', 'crm', 'people']));
  });

  it('ships its role templates, labelled with the plugin name', async () => {
    const res = await call(gw, 'GET', '/api/v1alpha1/roles?labelSelector=plugin.svc.run/plugin-name=people&sort=metadata.name,asc', undefined, auth);
    expect(res.status).toBe(200);
    expect(res.body.items.map((r: any) => r.metadata.name)).toEqual(['people-manage-persons', 'people-view-persons']);
    const manage = res.body.items[0];
    expect(manage.metadata.labels['svc.run/role-template']).toBe('true');
    expect(JSON.parse(manage.metadata.annotations['rbac.authorization.svc.run/dependencies'])).toEqual(['people-view-persons']);
    expect(manage.metadata.annotations['rbac.authorization.svc.run/module']).toBe('People');
    expect(manage.metadata.annotations['rbac.authorization.svc.run/display-name']).toBe('Manage persons');
    expect(JSON.parse(manage.metadata.annotations['rbac.authorization.svc.run/ui-permissions'])).toEqual(['plugin:people:manage']);
  });

  it('serves Person with its indexes and the console API', async () => {
    for (const [name, gender, age] of [['ada', 'FEMALE', 36], ['alan', 'MALE', 41], ['grace', 'FEMALE', 85]] as const) {
      expect((await call(gw, 'POST', PERSONS, { metadata: { name }, spec: { name, gender, age } }, auth)).status).toBe(201);
    }
    const women = await call(gw, 'GET', `${PERSONS}?fieldSelector=spec.gender=FEMALE&sort=spec.name,desc`, undefined, auth);
    expect(women.body.items.map((p: any) => p.metadata.name)).toEqual(['grace', 'ada']);
    expect((await call(gw, 'POST', PERSONS, { metadata: { name: 'old' }, spec: { age: 151 } }, auth)).status).toBe(422);

    const stats = await call(gw, 'GET', `${CONSOLE}/stats`, undefined, auth);
    expect(stats.status).toBe(200);
    expect(stats.body).toEqual({ total: 3, byGender: { MALE: 1, FEMALE: 2 } });
  });

  it('streams an import in and an export out', async () => {
    const lines = Array.from({ length: 250 }, (_, i) => JSON.stringify({ metadata: { name: `imp-${String(i).padStart(3, '0')}` }, spec: { name: `n${i}`, age: i % 100 } }));
    lines.splice(10, 0, JSON.stringify({ metadata: { name: 'bad-one' }, spec: { age: -1 } }));
    // A request body sent as a stream, in uneven chunks.
    const text = lines.join('\n') + '\n';
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        const bytes = new TextEncoder().encode(text);
        for (let i = 0; i < bytes.length; i += 777) c.enqueue(bytes.slice(i, i + 777));
        c.close();
      },
    });
    const imported = await fetch(`${gw.url}${CONSOLE}/imports`, { method: 'POST', body, headers: { ...auth, 'content-type': 'application/x-ndjson' }, duplex: 'half' } as RequestInit);
    expect(imported.status).toBe(200);
    const result = (await imported.json()) as any;
    expect(result.created).toHaveLength(250);
    expect(result.errors).toEqual([{ line: 11, detail: expect.stringContaining('') }]);

    const exported = await fetch(`${gw.url}${CONSOLE}/exports`, { headers: auth });
    expect(exported.status).toBe(200);
    expect(exported.headers.get('content-type')).toBe('application/x-ndjson');
    const names = (await exported.text()).trim().split('\n').map((l) => JSON.parse(l).metadata.name);
    expect(names).toHaveLength(253);
    expect(names.slice(0, 2)).toEqual(['ada', 'alan']);
  });

  it('answers 404 for paths under its groups that no route serves, and 405-free for other methods', async () => {
    expect((await call(gw, 'GET', `${CONSOLE}/nothing`, undefined, auth)).status).toBe(404);
    expect((await call(gw, 'DELETE', `${CONSOLE}/stats`, undefined, auth)).status).toBe(404);
  });
});
