/**
 * RBAC enforced end to end, on both stores: REST, GraphQL, REST watch and graphql-ws all ask the
 * same authorizer (issue 8 "Done when").
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, ANONYMOUSLY, basicAuth, call, startTestGateway, STORES, type TestGateway } from '../helpers/gateway.js';
import { bind, createRole, createUser, watchSocket } from '../helpers/rbac.js';
import { codes, gql, take, wsClient } from '../graphql/helpers.js';

const G = 'people.example.com';
const PERSONS = `/apis/${G}/v1alpha1/persons`;
const P = 'peopleExampleCom_v1alpha1';
const VIEW = [{ apiGroups: [G], resources: ['persons'], verbs: ['get', 'list', 'watch'] }];
const person = (name: string) => ({ metadata: { name }, spec: { name, age: 30 } });

describe.each(STORES)('RBAC enforcement (%s)', (kind) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(kind);
    for (const n of ['ada', 'bob', 'cyd']) expect((await call(gw, 'POST', PERSONS, person(n))).status).toBe(201);
  });
  afterAll(() => gw?.dispose());

  it('a new user has no access: 403 on REST, FORBIDDEN on GraphQL, refused watch and subscription', async () => {
    const auth = await createUser(gw, 'newbie');
    expect((await call(gw, 'GET', PERSONS, undefined, { authorization: auth })).status).toBe(403);
    expect((await call(gw, 'GET', `${PERSONS}/ada`, undefined, { authorization: auth })).status).toBe(403);
    expect((await call(gw, 'POST', PERSONS, person('x'), { authorization: auth })).status).toBe(403);
    const q = await gql(gw, `{ ${P}_persons { total } }`, undefined, { authorization: auth });
    expect(codes(q)).toEqual(['FORBIDDEN']);
    const w = watchSocket(gw.url + PERSONS, auth);
    expect(await w.opened).toBe(403);
    const client = wsClient(gw, { authorization: auth });
    try {
      const sub = client.iterate({ query: `subscription { ${P}_watchPersons { type } }` });
      const [first] = await take(sub, 1);
      expect(first.errors.map((e: any) => e.extensions.code)).toEqual(['FORBIDDEN']);
      expect(first.data).toBeUndefined();
    } finally {
      await client.dispose();
    }
    // anonymous: 401 with a challenge on REST, UNAUTHENTICATED on GraphQL
    const anon = await call(gw, 'GET', PERSONS, undefined, ANONYMOUSLY);
    expect(anon.status).toBe(401);
    expect(anon.headers.get('www-authenticate')).toMatch(/^Basic/);
    expect(codes(await gql(gw, `{ ${P}_persons { total } }`))).toEqual(['UNAUTHENTICATED']);
  });

  it('a denied write gets the same answer on both doors: anonymous 401 / UNAUTHENTICATED, logged in 403 / FORBIDDEN', async () => {
    const create = `mutation { ${P}_createPerson(object: { metadata: { name: "door" }, spec: { name: "D" } }) { metadata { name } } }`;
    const del = `mutation { ${P}_deletePerson(name: "ada") { metadata { name } } }`;
    const patch = `mutation { ${P}_patchPerson(name: "ada", patch: { spec: { age: 1 } }) { metadata { name } } }`;
    const watch = `subscription { ${P}_watchPersons { type } }`;
    const auth = await createUser(gw, 'doors');
    for (const [who, headers, status, code] of [
      ['anonymous', ANONYMOUSLY, 401, 'UNAUTHENTICATED'],
      ['doors', { authorization: auth }, 403, 'FORBIDDEN'],
    ] as const) {
      const post = await call(gw, 'POST', PERSONS, person('door'), headers);
      expect(post.status, who).toBe(status);
      expect(post.headers.get('content-type')).toContain('application/problem+json');
      if (status === 401) expect(post.headers.get('www-authenticate')).toMatch(/^Basic/);
      expect((await call(gw, 'DELETE', `${PERSONS}/ada`, undefined, headers)).status, who).toBe(status);
      expect((await call(gw, 'PATCH', `${PERSONS}/ada`, { spec: { age: 1 } }, { ...headers, 'content-type': 'application/merge-patch+json' })).status, who).toBe(status);
      const gqlHeaders: Record<string, string> = who === 'anonymous' ? {} : { authorization: auth };
      for (const m of [create, del, patch]) expect(codes(await gql(gw, m, undefined, gqlHeaders)), `${who}: ${m}`).toEqual([code]);
      const client = wsClient(gw, who === 'anonymous' ? undefined : { authorization: auth });
      try {
        const [first] = await take(client.iterate({ query: watch }), 1);
        expect(first.errors.map((e: any) => e.extensions.code), who).toEqual([code]);
      } finally {
        await client.dispose();
      }
    }
    expect((await call(gw, 'GET', `${PERSONS}/ada`)).status).toBe(200);
    expect((await call(gw, 'GET', `${PERSONS}/door`)).status).toBe(404);
  });

  it('bound to a view template: list and watch work, create is 403', async () => {
    const auth = await createUser(gw, 'viewer');
    // people-view-persons is shipped by the people plugin's bundle (plugins/people/extensions)
    const shipped = await call(gw, 'GET', '/api/v1alpha1/roles/people-view-persons');
    expect(shipped.body.rules).toEqual(expect.arrayContaining([expect.objectContaining(VIEW[0])]));
    expect((await bind(gw, 'viewer', 'people-view-persons')).status).toBe(201);
    const list = await call(gw, 'GET', PERSONS, undefined, { authorization: auth });
    expect(list.status).toBe(200);
    expect(list.body.total).toBe(3);
    expect((await call(gw, 'POST', PERSONS, person('x'), { authorization: auth })).status).toBe(403);
    const q = await gql(gw, `{ ${P}_persons { total } }`, undefined, { authorization: auth });
    expect(q.body.data[`${P}_persons`].total).toBe(3);
    const m = await gql(gw, `mutation { ${P}_createPerson(object: { metadata: { name: "y" }, spec: { name: "Y" } }) { metadata { name } } }`, undefined, {
      authorization: auth,
    });
    expect(codes(m)).toEqual(['FORBIDDEN']);
    const w = watchSocket(gw.url + PERSONS, auth);
    expect(await w.opened).toBe(101);
    await w.until(() => w.events.length >= 4);
    expect(w.events.slice(0, 3).map((e) => e.object.metadata.name).sort()).toEqual(['ada', 'bob', 'cyd']);
    expect(w.events[3].type).toBe('BOOKMARK'); // the end of the initial events
    w.ws.close();
  });

  it('tells user interfaces what a caller may do: permissions endpoint, me and canI', async () => {
    const auth = basicAuth('viewer', 'pw-viewer-secret');
    const perms = await call(gw, 'GET', '/apis/api.console.svc.run/v1alpha1/users/-/permissions', undefined, { authorization: auth });
    expect(perms.status).toBe(200);
    expect(perms.body.roles).toEqual(expect.arrayContaining(['people-view-persons', 'anonymous', 'authenticated']));
    expect(perms.body.uiPermissions).toContain('plugin:people:view');
    const q = await gql(
      gw,
      `{ me { roles uiPermissions } list: canI(verb: "list", group: "${G}", resource: "persons")
         create: canI(verb: "create", group: "${G}", resource: "persons")
         status: canI(verb: "update", group: "${G}", resource: "persons/status", name: "ada") }`,
      undefined,
      { authorization: auth },
    );
    expect(q.body.data).toEqual({ me: { roles: perms.body.roles, uiPermissions: perms.body.uiPermissions }, list: true, create: false, status: false });
    const admin = await call(gw, 'GET', '/apis/api.console.svc.run/v1alpha1/users/viewer/permissions');
    expect(admin.body).toEqual(perms.body);
    expect((await call(gw, 'GET', '/apis/api.console.svc.run/v1alpha1/users/admin/permissions', undefined, { authorization: auth })).status).toBe(403);
  });

  it("a manage template's dependencies grant view", async () => {
    const auth = await createUser(gw, 'manager');
    const manage = await createRole(gw, 'people-write-persons', [{ apiGroups: [G], resources: ['persons'], verbs: ['create', 'update', 'patch', 'delete'] }], {
      labels: { 'svc.run/role-template': 'true' },
      annotations: { 'rbac.authorization.svc.run/dependencies': '["people-view-persons"]' },
    });
    expect(manage.status).toBe(201);
    expect((await bind(gw, 'manager', 'people-write-persons')).status).toBe(201);
    expect((await call(gw, 'GET', PERSONS, undefined, { authorization: auth })).status).toBe(200);
    expect((await call(gw, 'POST', PERSONS, person('made-by-manager'), { authorization: auth })).status).toBe(201);
    const me = await gql(gw, '{ me { username roles } }', undefined, { authorization: auth });
    expect(me.body.data.me.roles).toEqual(expect.arrayContaining(['people-write-persons', 'people-view-persons', 'anonymous', 'authenticated']));
  });

  it('an aggregate-to-anonymous template makes a model public', async () => {
    expect((await call(gw, 'GET', '/apis/crm.example.net/v1/people', undefined, ANONYMOUSLY)).status).toBe(401);
    const t = await createRole(gw, 'crm-public-people', [{ apiGroups: ['crm.example.net'], resources: ['people'], verbs: ['get', 'list'] }], {
      labels: { 'svc.run/role-template': 'true', 'rbac.authorization.svc.run/aggregate-to-anonymous': 'true' },
    });
    expect(t.status).toBe(201);
    expect((await call(gw, 'GET', '/apis/crm.example.net/v1/people', undefined, ANONYMOUSLY)).status).toBe(200);
    expect((await gql(gw, '{ crmExampleNet_v1_people { total } }')).body.data.crmExampleNet_v1_people.total).toBe(0);
    // logged-in users hold anonymous too
    const auth = await createUser(gw, 'reader');
    expect((await call(gw, 'GET', '/apis/crm.example.net/v1/people', undefined, { authorization: auth })).status).toBe(200);
    expect((await call(gw, 'POST', '/apis/crm.example.net/v1/people', { metadata: { name: 'z' }, spec: { email: 'z@x.io' } }, ANONYMOUSLY)).status).toBe(401);
  });

  it('resourceNames limits get to one object and filters watch events', async () => {
    const auth = await createUser(gw, 'narrow');
    expect((await createRole(gw, 'people-only-ada', [{ apiGroups: [G], resources: ['persons'], resourceNames: ['ada'], verbs: ['get', 'watch', 'patch'] }])).status).toBe(201);
    expect((await bind(gw, 'narrow', 'people-only-ada')).status).toBe(201);
    expect((await call(gw, 'GET', `${PERSONS}/ada`, undefined, { authorization: auth })).status).toBe(200);
    expect((await call(gw, 'GET', `${PERSONS}/bob`, undefined, { authorization: auth })).status).toBe(403);
    expect((await call(gw, 'GET', PERSONS, undefined, { authorization: auth })).status).toBe(403);
    const w = watchSocket(gw.url + PERSONS, auth);
    expect(await w.opened).toBe(101);
    await w.until(() => w.events.length >= 2);
    await call(gw, 'PATCH', `${PERSONS}/bob`, { spec: { age: 41 } }, { 'content-type': 'application/merge-patch+json' });
    await call(gw, 'PATCH', `${PERSONS}/ada`, { spec: { age: 37 } }, { 'content-type': 'application/merge-patch+json' });
    await w.until(() => w.events.length >= 3);
    await new Promise((r) => setTimeout(r, 100));
    // ADDED for the one object in scope, the BOOKMARK ending the initial events, then its change.
    expect(w.events.map((e) => `${e.type}:${e.object.metadata.name ?? ''}`)).toEqual(['ADDED:ada', 'BOOKMARK:', 'MODIFIED:ada']);
    w.ws.close();
  });

  it('a user who may create bindings cannot bind itself to super-role nor create a role wider than its own', async () => {
    const auth = await createUser(gw, 'delegate');
    const rbacAdmin = await createRole(gw, 'rbac-editor', [
      { apiGroups: [''], resources: ['roles', 'rolebindings'], verbs: ['get', 'list', 'create', 'update', 'patch', 'delete'] },
      { apiGroups: [G], resources: ['persons'], verbs: ['get', 'list'] },
    ]);
    expect(rbacAdmin.status).toBe(201);
    expect((await bind(gw, 'delegate', 'rbac-editor')).status).toBe(201);
    const escalate = await bind(gw, 'delegate', 'super-role', auth);
    expect(escalate.status).toBe(403);
    const wider = await createRole(gw, 'people-all', [{ apiGroups: [G], resources: ['persons'], verbs: ['*'] }], {}, auth);
    expect(wider.status).toBe(403);
    const viaDependency = await createRole(gw, 'sneaky', [], { annotations: { 'rbac.authorization.svc.run/dependencies': '["super-role"]' } }, auth);
    expect(viaDependency.status).toBe(403);
    // within its own permissions it may
    expect((await createRole(gw, 'people-read', [{ apiGroups: [G], resources: ['persons'], verbs: ['list'] }], {}, auth)).status).toBe(201);
    expect((await bind(gw, 'viewer', 'people-read', auth)).status).toBe(201);
    const all = await call(gw, 'GET', '/api/v1alpha1/rolebindings');
    expect(all.body.items.map((b: any) => b.metadata.name)).not.toContain('delegate-super-role');
    expect((await call(gw, 'GET', '/api/v1alpha1/roles/people-all')).status).toBe(404);
  });

  it('a user who may update users cannot take over a more powerful account', async () => {
    const auth = await createUser(gw, 'helpdesk');
    expect((await createRole(gw, 'user-admin', [{ apiGroups: [''], resources: ['users'], verbs: ['get', 'list', 'create', 'update', 'patch', 'delete'] }])).status).toBe(201);
    expect((await bind(gw, 'helpdesk', 'user-admin')).status).toBe(201);
    const merge = { authorization: auth, 'content-type': 'application/merge-patch+json' };
    expect((await call(gw, 'PATCH', '/api/v1alpha1/users/admin', { spec: { password: 'taken-over' } }, merge)).status).toBe(403);
    expect((await call(gw, 'DELETE', '/api/v1alpha1/users/admin', undefined, { authorization: auth })).status).toBe(403);
    expect((await call(gw, 'GET', '/api/v1alpha1/users', undefined, { authorization: basicAuth('admin', 'taken-over') })).status).toBe(401);
    // a user with no more rights than the caller, and the caller's own account, may be changed
    await createUser(gw, 'intern');
    expect((await call(gw, 'PATCH', '/api/v1alpha1/users/intern', { spec: { password: 'reset-by-helpdesk' } }, merge)).status).toBe(200);
    expect((await call(gw, 'PATCH', '/api/v1alpha1/users/helpdesk', { spec: { displayName: 'Help desk' } }, merge)).status).toBe(200);
    // creating a user that a binding already names grants what that binding grants
    expect((await bind(gw, 'future-boss', 'super-role')).status).toBe(201);
    const squat = await call(gw, 'POST', '/api/v1alpha1/users', { metadata: { name: 'future-boss' }, spec: { password: 'mine-now' } }, { authorization: auth });
    expect(squat.status).toBe(403);
  });

  it("a binding's roleRef must name an existing role (422)", async () => {
    const r = await bind(gw, 'viewer', 'no-such-role');
    expect(r.status).toBe(422);
    expect(r.body.errors).toEqual([expect.objectContaining({ field: 'roleRef.name' })]);
  });

  it('super-role cannot be edited or deleted', async () => {
    const before = await call(gw, 'GET', '/api/v1alpha1/roles/super-role');
    expect(before.status).toBe(200);
    expect((await call(gw, 'DELETE', '/api/v1alpha1/roles/super-role')).status).toBe(403);
    const patched = await call(gw, 'PATCH', '/api/v1alpha1/roles/super-role', { rules: [] }, { 'content-type': 'application/merge-patch+json' });
    expect(patched.status).toBe(403);
    expect((await call(gw, 'DELETE', '/api/v1alpha1/roles')).status).toBe(403);
    const put = await call(gw, 'PUT', '/api/v1alpha1/roles/super-role', { ...before.body, rules: [] });
    expect(put.status).toBe(403);
    const status = await call(gw, 'PUT', '/api/v1alpha1/roles/super-role/status', { metadata: before.body.metadata, status: { x: 1 } });
    expect(status.status).toBe(403);
    for (const m of [
      'core_v1alpha1_patchRole(name: "super-role", patch: { rules: [] }) { metadata { name } }',
      'core_v1alpha1_deleteRole(name: "super-role") { metadata { name } }',
      'core_v1alpha1_updateRoleStatus(name: "super-role", status: { x: 1 }) { metadata { name } }',
    ]) {
      // as the administrator: the built-in role refuses, not the caller's rights
      const r = await gql(gw, `mutation { ${m} }`, undefined, { authorization: adminAuth });
      expect(codes(r)).toEqual(['FORBIDDEN']);
      expect(r.body.errors![0]!.message).toMatch(/built in/);
    }
    const after = await call(gw, 'GET', '/api/v1alpha1/roles/super-role');
    expect(after.body).toEqual(before.body);
    expect((await call(gw, 'GET', '/api/v1alpha1/roles/anonymous')).status).toBe(200);
  });

  it('a forbidden caller sending malformed JSON gets 403, not 400; an unknown resource 403, not 404', async () => {
    const auth = basicAuth('viewer', 'pw-viewer-secret');
    expect((await call(gw, 'POST', PERSONS, '{"metadata":', { authorization: auth })).status).toBe(403);
    expect((await call(gw, 'POST', '/apis/nothing.example.com/v1/things', '{', { authorization: auth })).status).toBe(403);
    expect((await call(gw, 'POST', PERSONS, '{"metadata":', ANONYMOUSLY)).status).toBe(401);
    expect((await call(gw, 'POST', PERSONS, '{"metadata":')).status).toBe(400);
    expect((await call(gw, 'GET', '/apis/nothing.example.com/v1/things')).status).toBe(404);
  });

  it('a revoked token gets 401', async () => {
    const auth = basicAuth('viewer', 'pw-viewer-secret');
    const created = await call(gw, 'POST', '/apis/uc.api.security.svc.run/v1alpha1/personalaccesstokens', { spec: { displayName: 'ci' } }, { authorization: auth });
    expect(created.status).toBe(201);
    const bearer = `Bearer ${created.body.token}`;
    expect((await call(gw, 'GET', PERSONS, undefined, { authorization: bearer })).status).toBe(200);
    const name = created.body.metadata.name;
    expect((await call(gw, 'DELETE', `/apis/uc.api.security.svc.run/v1alpha1/personalaccesstokens/${name}`, undefined, { authorization: auth })).status).toBe(200);
    const after = await call(gw, 'GET', PERSONS, undefined, { authorization: bearer });
    expect(after.status).toBe(401);
    expect(after.headers.get('www-authenticate')).toMatch(/^Basic/);
  });

  it('a grant and a revocation take effect on the next request', async () => {
    const auth = await createUser(gw, 'flip');
    expect((await call(gw, 'GET', PERSONS, undefined, { authorization: auth })).status).toBe(403);
    expect((await bind(gw, 'flip', 'people-view-persons')).status).toBe(201);
    expect((await call(gw, 'GET', PERSONS, undefined, { authorization: auth })).status).toBe(200);
    expect((await call(gw, 'DELETE', '/api/v1alpha1/rolebindings/flip-people-view-persons')).status).toBe(200);
    expect((await call(gw, 'GET', PERSONS, undefined, { authorization: auth })).status).toBe(403);
  });
});
