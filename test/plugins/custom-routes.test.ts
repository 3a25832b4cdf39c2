/**
 * Custom routes under RBAC on a real gateway (both stores): only the super administrator
 * reaches a plugin's custom route by default; role templates grant the rest (the people
 * plugin's view/manage pair, manage depending on view); a path of more than six segments is a
 * non-resource path, granted through nonResourceURLs. A handler's client acts as the caller.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANONYMOUSLY, call, STORES, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { bind, createRole, createUser } from '../helpers/rbac.js';
import { manifest, pluginsDir, type PluginsDir } from './fixtures.js';
import { cp } from 'node:fs/promises';
import { join } from 'node:path';

const PEOPLE = '/apis/console.api.people.example.com/v1alpha1';
const DEEP = '/apis/console.api.ops.example.com/v1/reports/daily/latest/summary'; // 7 segments

describe.each(STORES)('custom routes under RBAC (%s)', (kind) => {
  let dir: PluginsDir;
  let gw: TestGateway;
  const as: Record<string, { authorization: string }> = {};
  beforeAll(async () => {
    dir = await pluginsDir();
    await cp(join(import.meta.dirname, '../../plugins/people'), join(dir.dir, 'people'), { recursive: true });
    await dir.write('ops', {
      'plugin.yaml': manifest({ name: 'ops', group: 'ops.example.com' }),
      'index.mjs': `export default { routes: [
        { method: 'GET', path: '/apis/console.api.ops.example.com/v1/reports/{period}/latest/summary', handler: (req, ctx) => Response.json({ caller: ctx.user.username, params: ctx.params }) },
      ] };\n`,
    });
    gw = await startTestGateway(kind, { pluginsDir: dir.dir });
    for (const u of ['viewer', 'manager', 'plain', 'reporter']) as[u] = { authorization: await createUser(gw, u) };
    expect((await bind(gw, 'viewer', 'people-view-persons')).status).toBe(201);
    expect((await bind(gw, 'manager', 'people-manage-persons')).status).toBe(201);
    expect(
      (await createRole(gw, 'reports-reader', [{ nonResourceURLs: ['/apis/console.api.ops.example.com/v1/reports/*'], verbs: ['get'] }])).status,
    ).toBe(201);
    expect((await bind(gw, 'reporter', 'reports-reader')).status).toBe(201);
    await call(gw, 'POST', '/apis/people.example.com/v1alpha1/persons', { metadata: { name: 'ada' }, spec: { name: 'Ada', gender: 'FEMALE' } });
  });
  afterAll(async () => {
    await gw?.dispose();
    await dir?.remove();
  });

  it('only the super administrator by default', async () => {
    expect((await call(gw, 'GET', `${PEOPLE}/stats`)).status).toBe(200);
    expect((await call(gw, 'GET', `${PEOPLE}/stats`, undefined, as.plain)).status).toBe(403);
    expect((await call(gw, 'GET', `${PEOPLE}/stats`, undefined, ANONYMOUSLY)).status).toBe(401);
    expect((await call(gw, 'GET', DEEP, undefined, as.plain)).status).toBe(403);
    expect((await call(gw, 'GET', DEEP, undefined, ANONYMOUSLY)).status).toBe(401);
    const admin = await call(gw, 'GET', DEEP);
    expect(admin.status).toBe(200);
    expect(admin.body).toEqual({ caller: 'admin', params: { period: 'daily' } });
  });

  it('role templates grant custom routes; manage depends on view', async () => {
    const stats = await call(gw, 'GET', `${PEOPLE}/stats`, undefined, as.viewer);
    expect(stats.status).toBe(200);
    expect(stats.body.total).toBe(1);
    const ndjson = { 'content-type': 'application/x-ndjson' };
    const line = JSON.stringify({ metadata: { name: 'bob' }, spec: { name: 'Bob' } });
    expect((await call(gw, 'POST', `${PEOPLE}/imports`, line, { ...as.viewer, ...ndjson })).status).toBe(403);
    const imported = await call(gw, 'POST', `${PEOPLE}/imports`, line, { ...as.manager, ...ndjson });
    expect(imported.status).toBe(200);
    expect(imported.body.created).toEqual(['bob']);
    // the manager holds view through the dependency
    expect((await call(gw, 'GET', `${PEOPLE}/stats`, undefined, as.manager)).body.total).toBe(2);
  });

  it('a non-resource path is granted through nonResourceURLs only', async () => {
    const r = await call(gw, 'GET', DEEP, undefined, as.reporter);
    expect(r.status).toBe(200);
    expect(r.body.caller).toBe('reporter');
    expect((await call(gw, 'GET', DEEP, undefined, as.viewer)).status).toBe(403);
    // the grant is for GET under reports/ only
    expect((await call(gw, 'GET', `${PEOPLE}/stats`, undefined, as.reporter)).status).toBe(403);
  });

  it("a handler's client acts as the caller", async () => {
    // The stats route lists persons through ctx.client: a caller allowed on the route but not on
    // persons gets 403 from the handler.
    expect((await createRole(gw, 'stats-only', [{ apiGroups: ['console.api.people.example.com'], resources: ['stats'], verbs: ['get'] }])).status).toBe(201);
    expect((await bind(gw, 'plain', 'stats-only')).status).toBe(201);
    expect((await call(gw, 'GET', `${PEOPLE}/stats`, undefined, as.plain)).status).toBe(403);
  });
});
