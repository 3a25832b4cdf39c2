/**
 * docs/API.md §6 "No escalation", end to end on both stores (issue 35, finding 1): users holding
 * only a built-in template cannot reach further. A user manager cannot take over the administrator
 * (REST PUT, PATCH, DELETE, deletecollection and GraphQL); a role manager cannot aggregate a role
 * into authenticated or anonymous with rules it does not hold, nor add that label later; `*`
 * grants neither `bind` nor `escalate`. And what stays possible: managing users with fewer
 * permissions than one's own, and anything with `impersonate` or `escalate` named.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, ANONYMOUSLY, basicAuth, call, startTestGateway, STORES, type TestGateway } from '../helpers/gateway.js';
import { bind, createRole, createUser } from '../helpers/rbac.js';
import { codes, gql } from '../graphql/helpers.js';

const USERS = '/api/v1alpha1/users';
const ROLES = '/api/v1alpha1/roles';
const MERGE = { 'content-type': 'application/merge-patch+json' };
const EVERYTHING = [
  { apiGroups: ['*'], resources: ['*'], verbs: ['*'] },
  { nonResourceURLs: ['*'], verbs: ['*'] },
];
const aggregateTo = (role: string) => ({ labels: { [`rbac.authorization.svc.run/aggregate-to-${role}`]: 'true' } });

describe.each(STORES)('no escalation through the built-in templates (%s)', (kind) => {
  let gw: TestGateway;
  const as = (auth: string) => ({ authorization: auth });
  let um: string; // bound to system-users-manage only
  let rm: string; // bound to system-roles-manage only

  async function userWith(name: string, roles: string[], labels?: Record<string, string>): Promise<string> {
    const password = `pw-${name}-secret`;
    const r = await call(gw, 'POST', USERS, { metadata: { name, ...(labels ? { labels } : {}) }, spec: { password } });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    for (const role of roles) expect((await bind(gw, name, role)).status).toBe(201);
    return basicAuth(name, password);
  }

  beforeAll(async () => {
    gw = await startTestGateway(kind);
    um = await userWith('um', ['system-users-manage']);
    rm = await userWith('rm', ['system-roles-manage']);
    await userWith('root2', ['super-role'], { tier: 'top' });
    await userWith('weak', [], { tier: 'top' });
  });
  afterAll(() => gw?.dispose());

  it('a user manager cannot change the administrator\'s credentials or delete them, on any door', async () => {
    const patch = await call(gw, 'PATCH', `${USERS}/admin`, { spec: { password: 'stolen-password' } }, { ...as(um), ...MERGE });
    expect(patch.status).toBe(403);
    expect(patch.body.detail).toMatch(/impersonate/);
    expect((await call(gw, 'PATCH', `${USERS}/admin`, { spec: { disabled: true } }, { ...as(um), ...MERGE })).status).toBe(403);
    const read = await call(gw, 'GET', `${USERS}/admin`, undefined, as(um));
    expect(read.status).toBe(200);
    const put = await call(gw, 'PUT', `${USERS}/admin`, { ...read.body, spec: { ...read.body.spec, password: 'stolen-password' } }, as(um));
    expect(put.status).toBe(403);
    expect((await call(gw, 'DELETE', `${USERS}/admin`, undefined, as(um))).status).toBe(403);
    // GraphQL goes through the same operations
    const mutation = await gql(gw, 'mutation { core_v1alpha1_patchUser(name: "admin", patch: { spec: { password: "stolen-password" } }) { metadata { name } } }', undefined, as(um));
    expect(codes(mutation)).toEqual(['FORBIDDEN']);
    expect(codes(await gql(gw, 'mutation { core_v1alpha1_deleteUser(name: "admin") { metadata { name } } }', undefined, as(um)))).toEqual(['FORBIDDEN']);
    // deletecollection: one protected user in the selection refuses the whole request
    expect((await call(gw, 'DELETE', `${USERS}?labelSelector=tier%3Dtop`, undefined, as(um))).status).toBe(403);
    expect((await call(gw, 'GET', `${USERS}/weak`)).status).toBe(200);
    expect((await call(gw, 'GET', `${USERS}/root2`)).status).toBe(200);
    // nothing changed: the administrator's password is still theirs
    expect((await call(gw, 'GET', `${USERS}/admin`, undefined, { authorization: adminAuth })).status).toBe(200);
    expect((await call(gw, 'GET', `${USERS}/admin`, undefined, { authorization: basicAuth('admin', 'stolen-password') })).status).toBe(401);
  });

  it('removing the administrator\'s binding first does not help: every start binds them to super-role again', async () => {
    const root3 = await userWith('root3', ['super-role']);
    expect((await call(gw, 'DELETE', '/api/v1alpha1/rolebindings/admin-super-role', undefined, as(um))).status).toBe(200);
    try {
      const patch = await call(gw, 'PATCH', `${USERS}/admin`, { spec: { password: 'stolen-password' } }, { ...as(um), ...MERGE });
      expect(patch.status).toBe(403);
      expect((await call(gw, 'DELETE', `${USERS}/admin`, undefined, as(um))).status).toBe(403);
    } finally {
      expect((await bind(gw, 'admin', 'super-role', root3, 'admin-super-role')).status).toBe(201);
    }
    expect((await call(gw, 'GET', `${USERS}/admin`)).status).toBe(200);
  });

  it('a user manager still manages users with fewer permissions than theirs, and edits others\' other fields', async () => {
    const created = await call(gw, 'POST', USERS, { metadata: { name: 'carol', labels: { tier: 'low' } }, spec: { password: 'carol-first-pw' } }, as(um));
    expect(created.status).toBe(201);
    const reset = await call(gw, 'PATCH', `${USERS}/carol`, { spec: { password: 'carol-second-pw' } }, { ...as(um), ...MERGE });
    expect(reset.status).toBe(200);
    expect((await call(gw, 'GET', '/apis/api.console.svc.run/v1alpha1/users/-/permissions', undefined, { authorization: basicAuth('carol', 'carol-second-pw') })).status).toBe(200);
    expect((await call(gw, 'PATCH', `${USERS}/carol`, { spec: { disabled: true } }, { ...as(um), ...MERGE })).status).toBe(200);
    // a field that is no credential needs only the ordinary verb, whoever the user is
    const renamed = await call(gw, 'PATCH', `${USERS}/admin`, { spec: { displayName: 'The administrator' } }, { ...as(um), ...MERGE });
    expect(renamed.status).toBe(200);
    // binding a role the manager holds (view users) is fine
    expect((await bind(gw, 'carol', 'system-users-view', um)).status).toBe(201);
    expect((await call(gw, 'DELETE', `${USERS}?labelSelector=tier%3Dlow`, undefined, as(um))).status).toBe(200);
    expect((await call(gw, 'GET', `${USERS}/carol`)).status).toBe(404);
  });

  it('`impersonate` named on users lets a manager change any user\'s credentials', async () => {
    expect((await createRole(gw, 'impersonate-users', [{ apiGroups: [''], resources: ['users'], verbs: ['impersonate'] }])).status).toBe(201);
    const imp = await userWith('imp', ['system-users-manage', 'impersonate-users']);
    const reset = await call(gw, 'PATCH', `${USERS}/root2`, { spec: { password: 'root2-new-pw' } }, { ...as(imp), ...MERGE });
    expect(reset.status).toBe(200);
    expect((await call(gw, 'GET', USERS, undefined, { authorization: basicAuth('root2', 'root2-new-pw') })).status).toBe(200);
  });

  it('a role manager cannot aggregate `*` into authenticated or anonymous, nor add the label later', async () => {
    const bob = await createUser(gw, 'bob');
    for (const into of ['authenticated', 'anonymous']) {
      const r = await createRole(gw, `everyone-${into}`, EVERYTHING, aggregateTo(into), rm);
      expect(r.status, into).toBe(403);
      expect(r.body.detail).toContain(`to the holders of "${into}"`);
      expect(r.body.detail).toMatch(/escalate/);
      expect((await call(gw, 'GET', `${ROLES}/everyone-${into}`)).status).toBe(404);
    }
    // a role the manager may not grant, later labelled by them
    expect((await createRole(gw, 'read-users', [{ apiGroups: [''], resources: ['users'], verbs: ['get', 'list'] }])).status).toBe(201);
    const label = await call(gw, 'PATCH', `${ROLES}/read-users`, { metadata: aggregateTo('authenticated') }, { ...as(rm), ...MERGE });
    expect(label.status).toBe(403);
    expect((await call(gw, 'GET', `${ROLES}/read-users`)).body.metadata.labels ?? {}).toEqual({});
    // a role granting escalate, though the manager holds every ordinary verb on roles
    expect((await createRole(gw, 'self-escalate', [{ apiGroups: [''], resources: ['roles'], verbs: ['escalate'] }], {}, rm)).status).toBe(403);
    // nobody gained anything
    expect((await call(gw, 'GET', USERS, undefined, as(bob))).status).toBe(403);
    expect((await call(gw, 'GET', USERS, undefined, ANONYMOUSLY)).status).toBe(401);
  });

  it('`*` on roles and rolebindings does not grant `bind`', async () => {
    const star = [{ apiGroups: [''], resources: ['roles', 'rolebindings'], verbs: ['*'] }];
    expect((await createRole(gw, 'rbac-star', star)).status).toBe(201);
    const starry = await userWith('starry', ['rbac-star']);
    expect((await bind(gw, 'starry', 'super-role', starry, 'starry-super')).status).toBe(403);
    expect((await createRole(gw, 'starry-all', EVERYTHING, {}, starry)).status).toBe(403);
  });

  it('a role manager may aggregate rules they hold; `escalate` named may aggregate anything', async () => {
    const mine = await createRole(gw, 'roles-readers', [{ apiGroups: [''], resources: ['roles'], verbs: ['get', 'list'] }], aggregateTo('authenticated'), rm);
    expect(mine.status).toBe(201);
    expect((await call(gw, 'DELETE', `${ROLES}/roles-readers`, undefined, as(rm))).status).toBe(200);

    expect((await createRole(gw, 'escalate-roles', [{ apiGroups: [''], resources: ['roles'], verbs: ['escalate'] }])).status).toBe(201);
    const esc = await userWith('esc', ['system-roles-manage', 'escalate-roles']);
    const r = await createRole(gw, 'everyone-admin', EVERYTHING, aggregateTo('authenticated'), esc);
    expect(r.status).toBe(201);
    try {
      const bob = basicAuth('bob', 'pw-bob-secret');
      expect((await call(gw, 'GET', USERS, undefined, as(bob))).status).toBe(200);
    } finally {
      expect((await call(gw, 'DELETE', `${ROLES}/everyone-admin`)).status).toBe(200);
    }
  });
});
