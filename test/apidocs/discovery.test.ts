/**
 * Discovery and the OpenAPI index on a real gateway, both stores (docs/API.md §8): the shapes of
 * /apis, /apis/{g}, /apis/{g}/{v} and /api/v1alpha1; each lists only what the caller may get or
 * list (a user with a role on one model sees only that model, and no status it may not read);
 * anonymous callers need a rule; the documents change as soon as a plugin stops or starts.
 */
import { cp } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANONYMOUSLY, call, STORES, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { bind, createRole, createUser } from '../helpers/rbac.js';
import { PLUGINS, plugin, pluginsDir, type PluginsDir } from '../plugins/fixtures.js';

const PEOPLE_GV = '/apis/people.example.com/v1alpha1';
/**
 * Documents every caller sees: the content platform plugin's public routes and the permissions
 * route (everyone may call them); logged-in callers also their personal access tokens.
 */
const PUBLIC_ROUTES = ['apis/api.console.svc.run/v1alpha1', 'apis/api.content.svc.run/v1alpha1'];
const LOGGED_IN_ROUTES = [...PUBLIC_ROUTES, 'apis/uc.api.security.svc.run/v1alpha1'];
const ALL_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

async function until(check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe.each(STORES)('discovery (%s)', (kind) => {
  let dir: PluginsDir;
  let gw: TestGateway;
  const as: Record<string, { authorization: string }> = {};
  beforeAll(async () => {
    dir = await pluginsDir();
    for (const p of ['people', 'crm']) await cp(join(import.meta.dirname, `../../plugins/${p}`), join(dir.dir, p), { recursive: true });
    gw = await startTestGateway(kind, { pluginsDir: dir.dir });
    for (const u of ['viewer', 'plain']) as[u] = { authorization: await createUser(gw, u) };
    expect((await bind(gw, 'viewer', 'people-view-persons')).status).toBe(201);
  });
  afterAll(async () => {
    await gw?.dispose();
    await dir?.remove();
  });

  it('lists groups, versions and resources with the Kubernetes shapes', async () => {
    const groups = await call(gw, 'GET', '/apis');
    expect(groups.status).toBe(200);
    expect(groups.headers.get('content-type')).toMatch(/^application\/json/);
    const people = groups.body.groups.find((g: any) => g.name === 'people.example.com');
    expect(people).toEqual({
      name: 'people.example.com',
      versions: [{ groupVersion: 'people.example.com/v1alpha1', version: 'v1alpha1' }],
      preferredVersion: { groupVersion: 'people.example.com/v1alpha1', version: 'v1alpha1' },
    });
    const names = groups.body.groups.map((g: any) => g.name);
    expect(names).toEqual(expect.arrayContaining(['people.example.com', 'crm.example.net', 'plugin.svc.run']));
    expect(names).not.toContain(''); // the platform kinds are at /api

    expect((await call(gw, 'GET', '/apis/people.example.com')).body).toEqual(people);

    const gv = await call(gw, 'GET', PEOPLE_GV);
    expect(gv.status).toBe(200);
    expect(gv.body).toEqual({
      groupVersion: 'people.example.com/v1alpha1',
      resources: [
        { name: 'persons', singularName: 'person', kind: 'Person', verbs: ALL_VERBS },
        { name: 'persons/status', singularName: '', kind: 'Person', verbs: ['get', 'patch', 'update'] },
      ],
    });
    const crm = await call(gw, 'GET', '/apis/crm.example.net/v1');
    expect(crm.body.resources.map((r: any) => r.name).sort()).toEqual(['deals', 'deals/status', 'people', 'people/status']);

    const core = await call(gw, 'GET', '/api/v1alpha1');
    expect(core.status).toBe(200);
    expect(core.body.groupVersion).toBe('v1alpha1');
    expect(core.body.resources.filter((r: any) => !r.name.includes('/')).map((r: any) => r.name).sort()).toEqual(['rolebindings', 'roles', 'users']);
    expect(core.body.resources.find((r: any) => r.name === 'users')).toEqual({ name: 'users', singularName: 'user', kind: 'User', verbs: ALL_VERBS });
    expect((await call(gw, 'GET', '/api')).body).toEqual({ versions: ['v1alpha1'] });

    for (const missing of ['/apis/nowhere.example.com/v1', '/apis/people.example.com/v9', '/apis/nowhere.example.com', '/api/v2']) {
      const r = await call(gw, 'GET', missing);
      expect(r.status, missing).toBe(404);
      expect(r.headers.get('content-type')).toBe('application/problem+json');
    }
  });

  it('discovery is read-only and takes no query parameters', async () => {
    const post = await call(gw, 'POST', '/apis', {});
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toContain('GET');
    const typo = await call(gw, 'GET', `${PEOPLE_GV}?labelselector=x`);
    expect(typo.status).toBe(400);
    expect(typo.body.detail).toContain('labelselector');
  });

  it('a user with a role on one model sees only that model', async () => {
    const groups = await call(gw, 'GET', '/apis', undefined, as.viewer);
    expect(groups.status).toBe(200);
    expect(groups.body.groups.map((g: any) => g.name)).toEqual(['people.example.com']);
    const gv = await call(gw, 'GET', PEOPLE_GV, undefined, as.viewer);
    // people-view-persons grants persons, not persons/status
    expect(gv.body.resources.map((r: any) => r.name)).toEqual(['persons']);
    expect((await call(gw, 'GET', '/apis/crm.example.net/v1', undefined, as.viewer)).status).toBe(404);
    expect((await call(gw, 'GET', '/api/v1alpha1', undefined, as.viewer)).status).toBe(404);

    const index = await call(gw, 'GET', '/openapi/v3', undefined, as.viewer);
    expect(index.status).toBe(200);
    // the model, and the people console routes the role grants (stats, exports)
    expect(Object.keys(index.body.paths).sort()).toEqual([...LOGGED_IN_ROUTES, 'apis/console.api.people.example.com/v1alpha1', 'apis/people.example.com/v1alpha1'].sort());
    const all = await call(gw, 'GET', '/openapi.json', undefined, as.viewer);
    expect(all.status).toBe(200);
    const paths = Object.keys(all.body.paths);
    expect(paths).toContain(`${PEOPLE_GV}/persons`);
    expect(paths).not.toContain(`${PEOPLE_GV}/persons/{name}/status`);
    expect(paths.filter((p) => p.startsWith('/api/') || p.startsWith('/apis/crm.'))).toEqual([]);
    expect(paths).toContain('/apis/console.api.people.example.com/v1alpha1/stats');
    expect(paths).not.toContain('/apis/console.api.people.example.com/v1alpha1/imports'); // manage only
    expect(Object.keys(all.body.components.schemas).filter((s) => s.startsWith('Core') || s.startsWith('Crm'))).toEqual([]);

    // a logged-in user without roles gets answers, listing nothing
    expect((await call(gw, 'GET', '/apis', undefined, as.plain)).body).toEqual({ groups: [] });
    expect(Object.keys((await call(gw, 'GET', '/openapi/v3', undefined, as.plain)).body.paths)).toEqual(LOGGED_IN_ROUTES);
    expect((await call(gw, 'GET', PEOPLE_GV, undefined, as.plain)).status).toBe(404);
    expect((await call(gw, 'GET', '/openapi/v3/apis/people.example.com/v1alpha1', undefined, as.plain)).status).toBe(404);
  });

  it('anonymous callers need a rule', async () => {
    // (The /docs page itself is public and loads these with the console's token: pages.test.ts.)
    for (const path of ['/apis', PEOPLE_GV, '/api/v1alpha1', '/openapi/v3', '/openapi/v3/apis/people.example.com/v1alpha1', '/openapi.json']) {
      const r = await call(gw, 'GET', path, undefined, ANONYMOUSLY);
      expect(r.status, path).toBe(401);
      expect(r.headers.get('www-authenticate')).toMatch(/^Basic/);
    }
    // the discovery right does not reach deeper non-resource paths or malformed ones
    expect((await call(gw, 'GET', `${PEOPLE_GV}/persons/%2e%2e`, undefined, as.plain)).status).toBe(403);
    expect((await call(gw, 'GET', '/apis/a.example.com/v1/x/y/z/w', undefined, as.plain)).status).toBe(403);

    const grant = await createRole(gw, 'public-api-reference', [
      { nonResourceURLs: ['/apis', '/openapi/*'], verbs: ['get'] },
      { apiGroups: ['crm.example.net'], resources: ['people'], verbs: ['list'] },
    ], { labels: { 'rbac.authorization.svc.run/aggregate-to-anonymous': 'true' } });
    expect(grant.status).toBe(201);
    try {
      await until(async () => (await call(gw, 'GET', '/apis', undefined, ANONYMOUSLY)).status === 200);
      const groups = await call(gw, 'GET', '/apis', undefined, ANONYMOUSLY);
      expect(groups.body.groups.map((g: any) => g.name)).toEqual(['crm.example.net']);
      const gv = await call(gw, 'GET', '/apis/crm.example.net/v1', undefined, ANONYMOUSLY);
      expect(gv.body.resources.map((r: any) => r.name)).toEqual(['people']);
      const index = await call(gw, 'GET', '/openapi/v3', undefined, ANONYMOUSLY);
      expect(Object.keys(index.body.paths)).toEqual([...PUBLIC_ROUTES, 'apis/crm.example.net/v1']);
      expect((await call(gw, 'GET', '/openapi.json', undefined, ANONYMOUSLY)).status).toBe(401); // not granted
    } finally {
      expect((await call(gw, 'DELETE', '/api/v1alpha1/roles/public-api-reference')).status).toBe(200);
    }
  });

  it('documents change as soon as a plugin stops or starts', async () => {
    const before = await call(gw, 'GET', '/openapi/v3');
    const crmUrl = before.body.paths['apis/crm.example.net/v1'].serverRelativeURL;
    expect(before.body.paths['apis/people.example.com/v1alpha1']).toBeDefined();
    const allBefore = await call(gw, 'GET', '/openapi.json');
    const etagBefore = allBefore.headers.get('etag');

    const stop = await call(gw, 'PATCH', `${PLUGINS}/people`, { spec: { enabled: false } }, { 'content-type': 'application/merge-patch+json' });
    expect(stop.status).toBe(200);
    await until(async () => (await plugin(gw, 'people')).status?.phase === 'STOPPED');
    const groups = await call(gw, 'GET', '/apis');
    expect(groups.body.groups.map((g: any) => g.name)).not.toContain('people.example.com');
    expect((await call(gw, 'GET', PEOPLE_GV)).status).toBe(404);
    const index = await call(gw, 'GET', '/openapi/v3');
    expect(index.body.paths['apis/people.example.com/v1alpha1']).toBeUndefined();
    expect(index.body.paths['apis/console.api.people.example.com/v1alpha1']).toBeUndefined();
    // another group's document is unchanged: same URL, same hash
    expect(index.body.paths['apis/crm.example.net/v1'].serverRelativeURL).toBe(crmUrl);
    const all = await call(gw, 'GET', '/openapi.json', undefined, { 'if-none-match': etagBefore! });
    expect(all.status).toBe(200);
    expect(all.headers.get('etag')).not.toBe(etagBefore);
    expect(Object.keys(all.body.paths).filter((p) => p.includes('people.example.com'))).toEqual([]);

    const start = await call(gw, 'PUT', `${PLUGINS}/people`, { ...(await plugin(gw, 'people')), spec: { ...(await plugin(gw, 'people')).spec, enabled: true } });
    expect(start.status).toBe(200);
    await until(async () => (await plugin(gw, 'people')).status?.phase === 'STARTED');
    const back = await call(gw, 'GET', '/openapi/v3');
    expect(back.body.paths['apis/people.example.com/v1alpha1']).toEqual(before.body.paths['apis/people.example.com/v1alpha1']);
    expect((await call(gw, 'GET', '/openapi.json')).headers.get('etag')).toBe(etagBefore);
    expect((await call(gw, 'GET', PEOPLE_GV)).status).toBe(200);
  });
});
