/**
 * The `status` subresource and deletecollection are authorized on their own (docs/API.md §6), on
 * REST and GraphQL, both stores: the right on `persons` grants neither `persons/status` nor
 * `deletecollection`; a denied request changes nothing; `*\/status` and resourceNames work on
 * status; a resourceNames rule never grants deletecollection.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuth, call, startTestGateway, STORES, type TestGateway } from '../helpers/gateway.js';
import { bind, createRole, createUser } from '../helpers/rbac.js';
import { codes, gql } from '../graphql/helpers.js';

const G = 'people.example.com';
const PERSONS = `/apis/${G}/v1alpha1/persons`;
const P = 'peopleExampleCom_v1alpha1';
const MERGE = { 'content-type': 'application/merge-patch+json' };
const person = (name: string, team = 'a') => ({ metadata: { name, labels: { [`${G}/team`]: team } }, spec: { name, age: 30 }, status: { phase: 'new' } });

describe.each(STORES)('RBAC on status and deletecollection (%s)', (kind) => {
  let gw: TestGateway;
  /** Every person as the administrator sees it: name → {version, phase}. */
  const snapshot = async () => {
    const r = await call(gw, 'GET', PERSONS);
    expect(r.status).toBe(200);
    return Object.fromEntries(r.body.items.map((o: any) => [o.metadata.name, `${o.metadata.version}:${o.status?.phase}:${o.metadata.deletionTimestamp ?? ''}`]));
  };
  const phaseOf = async (name: string) => (await call(gw, 'GET', `${PERSONS}/${name}`)).body.status?.phase;
  const statusBody = async (name: string, phase: string) => {
    const cur = (await call(gw, 'GET', `${PERSONS}/${name}`)).body;
    return { metadata: { name, version: cur.metadata.version }, status: { phase } };
  };
  const updateStatus = (name: string, phase: string) =>
    `mutation { ${P}_updatePersonStatus(name: "${name}", status: { phase: "${phase}" }) { status { phase } } }`;

  beforeAll(async () => {
    gw = await startTestGateway(kind);
    for (const n of ['ada', 'bob', 'cyd', 'dan']) expect((await call(gw, 'POST', PERSONS, person(n, n === 'dan' ? 'b' : 'a'))).status).toBe(201);
    // Everything on persons itself, nothing on a subresource, no deletecollection.
    expect((await createRole(gw, 'people-objects-only', [{ apiGroups: [G], resources: ['persons'], verbs: ['get', 'list', 'create', 'update', 'patch', 'delete'] }])).status).toBe(201);
    expect((await createRole(gw, 'people-status-writer', [{ apiGroups: [G], resources: ['persons/status'], verbs: ['get', 'update', 'patch'] }])).status).toBe(201);
    expect((await createRole(gw, 'any-status-writer', [{ apiGroups: ['*'], resources: ['*/status'], verbs: ['update'] }])).status).toBe(201);
    expect((await createRole(gw, 'ada-status-only', [{ apiGroups: [G], resources: ['persons/status'], resourceNames: ['ada'], verbs: ['update', 'patch'] }])).status).toBe(201);
    expect((await createRole(gw, 'people-deleter', [{ apiGroups: [G], resources: ['persons'], verbs: ['list', 'deletecollection'] }])).status).toBe(201);
    expect(
      (await createRole(gw, 'people-named-deleter', [{ apiGroups: [G], resources: ['persons'], resourceNames: ['ada', 'bob', 'cyd', 'dan'], verbs: ['deletecollection', 'delete'] }])).status,
    ).toBe(201);
  });
  afterAll(() => gw?.dispose());

  it('the right on persons grants no status read or write (REST and GraphQL); nothing changes', async () => {
    const auth = await createUser(gw, 'objects-only');
    expect((await bind(gw, 'objects-only', 'people-objects-only')).status).toBe(201);
    const h = { authorization: auth };
    const before = await snapshot();
    // the object itself is allowed
    expect((await call(gw, 'GET', `${PERSONS}/ada`, undefined, h)).status).toBe(200);
    // its status is not
    expect((await call(gw, 'GET', `${PERSONS}/ada/status`, undefined, h)).status).toBe(403);
    expect((await call(gw, 'PUT', `${PERSONS}/ada/status`, await statusBody('ada', 'hacked'), h)).status).toBe(403);
    expect((await call(gw, 'PATCH', `${PERSONS}/ada/status`, { status: { phase: 'hacked' } }, { ...h, ...MERGE })).status).toBe(403);
    // denied before the body is read: malformed JSON, a wrong media type or a missing object are 403 too
    expect((await call(gw, 'PUT', `${PERSONS}/ada/status`, '{"status":', h)).status).toBe(403);
    expect((await call(gw, 'PATCH', `${PERSONS}/ada/status`, '{}', { ...h, 'content-type': 'text/plain' })).status).toBe(403);
    expect((await call(gw, 'PUT', `${PERSONS}/nobody/status`, { status: {} }, h)).status).toBe(403);
    const m = await gql(gw, updateStatus('ada', 'hacked'), undefined, h);
    expect(codes(m)).toEqual(['FORBIDDEN']);
    expect(m.body.data?.[`${P}_updatePersonStatus`] ?? null).toBeNull();
    // and a status smuggled into a PUT or PATCH of the object is ignored (status is server-owned there)
    const cur = (await call(gw, 'GET', `${PERSONS}/ada`, undefined, h)).body;
    const put = await call(gw, 'PUT', `${PERSONS}/ada`, { ...cur, status: { phase: 'hacked' } }, h);
    expect(put.status).toBe(200);
    const patched = await call(gw, 'PATCH', `${PERSONS}/ada`, { status: { phase: 'hacked' } }, { ...h, ...MERGE });
    expect(patched.status).toBe(200);
    expect(await phaseOf('ada')).toBe('new');
    const after = await snapshot();
    expect({ ...after, ada: undefined }).toEqual({ ...before, ada: undefined });
  });

  it('persons/status grants status writes only; */status and resourceNames on status work (REST and GraphQL)', async () => {
    const auth = await createUser(gw, 'status-writer');
    expect((await bind(gw, 'status-writer', 'people-status-writer')).status).toBe(201);
    const h = { authorization: auth };
    expect((await call(gw, 'GET', `${PERSONS}/bob/status`, undefined, h)).status).toBe(200);
    const put = await call(gw, 'PUT', `${PERSONS}/bob/status`, await statusBody('bob', 'put'), h);
    expect(put.status).toBe(200);
    expect(put.body.status).toEqual({ phase: 'put' });
    expect((await call(gw, 'PATCH', `${PERSONS}/bob/status`, { status: { phase: 'patched' } }, { ...h, ...MERGE })).status).toBe(200);
    const m = await gql(gw, updateStatus('bob', 'graphql'), undefined, h);
    expect(m.body.errors).toBeUndefined();
    expect(m.body.data[`${P}_updatePersonStatus`].status).toEqual({ phase: 'graphql' });
    expect(await phaseOf('bob')).toBe('graphql');
    // allowed on the path: now the body and the object matter (400, 404)
    expect((await call(gw, 'PUT', `${PERSONS}/bob/status`, '{"status":', h)).status).toBe(400);
    expect((await call(gw, 'PUT', `${PERSONS}/bob/status`, { metadata: { name: 'cyd', version: 1 }, status: {} }, h)).status).toBe(400);
    expect((await call(gw, 'PATCH', `${PERSONS}/nobody/status`, { status: {} }, { ...h, ...MERGE })).status).toBe(404);
    // the status right grants nothing on the object itself
    expect((await call(gw, 'GET', `${PERSONS}/bob`, undefined, h)).status).toBe(403);
    expect((await call(gw, 'PATCH', `${PERSONS}/bob`, { spec: { age: 1 } }, { ...h, ...MERGE })).status).toBe(403);
    expect(codes(await gql(gw, `mutation { ${P}_patchPerson(name: "bob", patch: { spec: { age: 1 } }) { metadata { name } } }`, undefined, h))).toEqual(['FORBIDDEN']);

    // */status: update on the status of any resource, nothing else
    const any = await createUser(gw, 'any-status');
    expect((await bind(gw, 'any-status', 'any-status-writer')).status).toBe(201);
    expect((await call(gw, 'PUT', `${PERSONS}/cyd/status`, await statusBody('cyd', 'star'), { authorization: any })).status).toBe(200);
    expect(codes(await gql(gw, updateStatus('cyd', 'star-gql'), undefined, { authorization: any }))).toEqual([]);
    expect(await phaseOf('cyd')).toBe('star-gql');
    expect((await call(gw, 'PATCH', `${PERSONS}/cyd/status`, { status: { phase: 'x' } }, { authorization: any, ...MERGE })).status).toBe(403);
    expect((await call(gw, 'GET', `${PERSONS}/cyd/status`, undefined, { authorization: any })).status).toBe(403);

    // resourceNames on status: ada's status only
    const narrow = await createUser(gw, 'ada-status');
    expect((await bind(gw, 'ada-status', 'ada-status-only')).status).toBe(201);
    expect((await call(gw, 'PATCH', `${PERSONS}/ada/status`, { status: { phase: 'named' } }, { authorization: narrow, ...MERGE })).status).toBe(200);
    expect((await call(gw, 'PATCH', `${PERSONS}/bob/status`, { status: { phase: 'named' } }, { authorization: narrow, ...MERGE })).status).toBe(403);
    expect(codes(await gql(gw, updateStatus('bob', 'named'), undefined, { authorization: narrow }))).toEqual(['FORBIDDEN']);
    expect(codes(await gql(gw, updateStatus('ada', 'named-gql'), undefined, { authorization: narrow }))).toEqual([]);
    expect(await phaseOf('ada')).toBe('named-gql');
    expect(await phaseOf('bob')).toBe('graphql');
  });

  it('deletecollection needs its own verb; a resourceNames rule never grants it; a denial deletes nothing', async () => {
    const objectsOnly = { authorization: basicAuth('objects-only', 'pw-objects-only-secret') };
    const named = await createUser(gw, 'named-deleter');
    expect((await bind(gw, 'named-deleter', 'people-named-deleter')).status).toBe(201);
    const before = await snapshot();
    // `delete` on every object is not `deletecollection`
    expect((await call(gw, 'DELETE', PERSONS, undefined, objectsOnly)).status).toBe(403);
    expect((await call(gw, 'DELETE', `${PERSONS}?labelSelector=${G}/team=b`, undefined, objectsOnly)).status).toBe(403);
    // resourceNames naming every object still does not grant it
    expect((await call(gw, 'DELETE', PERSONS, undefined, { authorization: named })).status).toBe(403);
    // a denied caller with a malformed selector gets 403, not 400
    expect((await call(gw, 'DELETE', `${PERSONS}?labelSelector=!!!`, undefined, { authorization: named })).status).toBe(403);
    expect(await snapshot()).toEqual(before);

    const deleter = await createUser(gw, 'deleter');
    expect((await bind(gw, 'deleter', 'people-deleter')).status).toBe(201);
    expect((await call(gw, 'DELETE', `${PERSONS}?labelSelector=!!!`, undefined, { authorization: deleter })).status).toBe(400);
    const gone = await call(gw, 'DELETE', `${PERSONS}?labelSelector=${G}/team=b`, undefined, { authorization: deleter });
    expect(gone.status).toBe(200);
    expect(gone.body.items.map((o: any) => o.metadata.name)).toEqual(['dan']);
    const left = await call(gw, 'GET', PERSONS);
    expect(left.body.items.map((o: any) => o.metadata.name).sort()).toEqual(['ada', 'bob', 'cyd']);
    // deletecollection grants no single delete
    expect((await call(gw, 'DELETE', `${PERSONS}/ada`, undefined, { authorization: deleter })).status).toBe(403);
    expect(codes(await gql(gw, `mutation { ${P}_deletePerson(name: "ada") { metadata { name } } }`, undefined, { authorization: deleter }))).toEqual(['FORBIDDEN']);
    expect((await call(gw, 'GET', `${PERSONS}/ada`)).status).toBe(200);
  });
});
