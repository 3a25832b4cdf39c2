/**
 * The plugin lifecycle on a real gateway (both stores): `requires` order, a plugin whose `start`
 * throws (FAILED, the others keep running), and stopping and starting a plugin at runtime through
 * `spec.enabled` (PUT and merge patch), checked on REST, the GraphQL schema, an open watch and a
 * GraphQL-independent custom route; stored objects survive a stop.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, STORES, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { openWatch } from '../watch/helpers.js';
import { wsClient } from '../graphql/helpers.js';
import { adminAuth } from '../helpers/gateway.js';
import { auth, eventually, manifest, plugin, PLUGINS, pluginsDir, waitPhase, type PluginsDir } from './fixtures.js';

const MERGE = { 'content-type': 'application/merge-patch+json' };
const GADGETS = '/apis/toggle.example.com/v1/gadgets';

/** A code entry whose start (and stop) append the plugin's name to `order.log` beside it. */
const recorder = (name: string, extra = '') => `import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
const log = join(import.meta.dirname, '..', 'order.log');
export default {
  ${extra}
  start() { appendFileSync(log, 'start ${name}\\n'); },
  stop() { appendFileSync(log, 'stop ${name}\\n'); },
};
`;

const gql = async (gw: TestGateway, query: string) => (await call(gw, 'POST', '/graphql', { query })).body;

describe.each(STORES)('plugin lifecycle (%s)', (kind) => {
  let dir: PluginsDir;
  let gw: TestGateway;
  beforeAll(async () => {
    dir = await pluginsDir();
    // Folder order is aa-app, bb-broken, zz-lib; aa-app requires zz-lib, so zz-lib starts first.
    await dir.write('aa-app', { 'plugin.yaml': manifest({ name: 'aa-app', requires: ['zz-lib'] }), 'index.mjs': recorder('aa-app') });
    await dir.write('zz-lib', { 'plugin.yaml': manifest({ name: 'zz-lib' }), 'index.mjs': recorder('zz-lib') });
    await dir.write('bb-broken', {
      'plugin.yaml': manifest({ name: 'bb-broken' }),
      'index.mjs': `export default { start() { throw new Error('cannot reach the moon'); } };\n`,
      'extensions/roles.yaml': `apiVersion: v1alpha1\nkind: Role\nmetadata:\n  name: bb-broken-view\n  labels: { svc.run/role-template: "true" }\nrules: []\n`,
    });
    await dir.write('needs-missing', { 'plugin.yaml': manifest({ name: 'needs-missing', requires: ['nowhere'] }) });
    await dir.write('toggle', {
      'plugin.yaml': manifest({ name: 'toggle', group: 'toggle.example.com', kind: 'Gadget', indexes: ['{ name: spec.title, path: spec.title }'] }),
      'extensions/roles.yaml': `apiVersion: v1alpha1\nkind: Role\nmetadata:\n  name: toggle-view-gadgets\n  labels: { svc.run/role-template: "true" }\nrules:\n  - { apiGroups: [toggle.example.com], resources: [gadgets], verbs: [get, list, watch] }\n`,
      'index.mjs': recorder(
        'toggle',
        `routes: [{ method: 'GET', path: '/apis/console.api.toggle.example.com/v1/ping', handler: () => Response.json({ pong: true }) }],`,
      ),
    });
    gw = await startTestGateway(kind, { pluginsDir: dir.dir });
  });
  afterAll(async () => {
    await gw?.dispose();
    await dir?.remove();
  });

  it('starts plugins in requires order; a missing requirement is FAILED', async () => {
    const log = await readFile(join(dir.dir, 'order.log'), 'utf8');
    const starts = log.split('\n').filter((l) => l.startsWith('start'));
    expect(starts.indexOf('start zz-lib')).toBeGreaterThanOrEqual(0);
    expect(starts.indexOf('start zz-lib')).toBeLessThan(starts.indexOf('start aa-app'));
    expect((await plugin(gw, 'aa-app')).status.phase).toBe('STARTED');
    const missing = await plugin(gw, 'needs-missing');
    expect(missing.status.phase).toBe('FAILED');
    expect(missing.status.reason).toContain('requires plugin "nowhere"');
  });

  it('a plugin whose start throws is FAILED, undone, and the others keep running', async () => {
    const p = await plugin(gw, 'bb-broken');
    expect(p.status.phase).toBe('FAILED');
    expect(p.status.reason).toContain('start() failed: cannot reach the moon');
    expect((await call(gw, 'GET', '/apis/bb-broken.example.com/v1/things')).status).toBe(404);
    expect((await call(gw, 'GET', '/api/v1alpha1/roles/bb-broken-view')).status).toBe(404);
    for (const other of ['aa-app', 'zz-lib', 'toggle', 'content']) {
      expect((await plugin(gw, other)).status.phase, other).toBe('STARTED');
    }
    expect((await call(gw, 'GET', '/apis/aa-app.example.com/v1/things')).status).toBe(200);
  });

  it('lists every plugin with its phase', async () => {
    const list = await call(gw, 'GET', `${PLUGINS}?sort=metadata.name,asc`);
    expect(list.status).toBe(200);
    const phases = Object.fromEntries(list.body.items.map((p: any) => [p.metadata.name, p.status?.phase]));
    expect(phases).toMatchObject({ 'aa-app': 'STARTED', 'bb-broken': 'FAILED', content: 'STARTED', toggle: 'STARTED', 'zz-lib': 'STARTED' });
  });

  it('stops on spec.enabled=false (PUT) and starts again on a merge patch, under traffic', async () => {
    expect((await call(gw, 'POST', GADGETS, { metadata: { name: 'g1' }, spec: { title: 'one' } })).status).toBe(201);
    const field = 'toggleExampleCom_v1_gadgets';
    expect((await gql(gw, `{ ${field} { total } }`)).data[field].total).toBe(1);
    const watch = openWatch(gw, '', auth, GADGETS);
    await watch.opened;
    await watch.until((ev) => ev.some((e) => e.type === 'ADDED'), 'initial ADDED');
    // and a GraphQL subscription on the same model
    const client = wsClient(gw, { authorization: adminAuth });
    const sub = client.iterate({ query: 'subscription { toggleExampleCom_v1_watchGadgets { type object { metadata { name } } } }' });
    const subResults: any[] = [];
    const subEnded = (async () => {
      try {
        for await (const r of sub) subResults.push(r);
      } catch (e) {
        subResults.push({ thrown: e instanceof Error ? e.message : e });
      }
    })();
    await eventually(async () => expect(subResults.length).toBeGreaterThan(0));
    expect(subResults[0].data.toggleExampleCom_v1_watchGadgets).toMatchObject({ type: 'ADDED', object: { metadata: { name: 'g1' } } });

    const current = await plugin(gw, 'toggle');
    const put = await call(gw, 'PUT', `${PLUGINS}/toggle`, { ...current, spec: { ...current.spec, enabled: false } });
    expect(put.status).toBe(200);
    await waitPhase(gw, 'toggle', 'STOPPED');
    // REST, GraphQL, the custom route and the bundle are gone; the open watch ended clearly.
    expect((await call(gw, 'GET', GADGETS)).status).toBe(404);
    expect((await call(gw, 'GET', '/apis/console.api.toggle.example.com/v1/ping')).status).toBe(404);
    expect((await call(gw, 'GET', '/api/v1alpha1/roles/toggle-view-gadgets')).status).toBe(404);
    const gone = await gql(gw, `{ ${field} { total } }`);
    expect(gone.errors?.[0]?.message).toContain(field);
    expect((await gql(gw, '{ __type(name: "ToggleExampleComV1Gadget") { name } }')).data.__type).toBeNull();
    await watch.until((ev) => ev.some((e) => e.type === 'ERROR'), 'final ERROR event');
    const last = watch.events.at(-1);
    expect(last.type).toBe('ERROR');
    expect(last.object.code).toBe(410);
    expect(last.object.message).toContain('no longer served');
    expect(await watch.closed).toBe(4410);
    await subEnded; // the subscription ended too, with a final error saying why
    expect(JSON.stringify(subResults.at(-1))).toMatch(/GONE|no longer served/);
    await client.dispose();
    // other plugins are untouched
    expect((await call(gw, 'GET', '/apis/aa-app.example.com/v1/things?size=1')).status).toBe(200);

    const patched = await call(gw, 'PATCH', `${PLUGINS}/toggle`, { spec: { enabled: true } }, MERGE);
    expect(patched.status).toBe(200);
    await waitPhase(gw, 'toggle', 'STARTED');
    const kept = await call(gw, 'GET', `${GADGETS}/g1`);
    expect(kept.status).toBe(200);
    expect(kept.body.spec.title).toBe('one');
    expect((await call(gw, 'GET', `${GADGETS}?fieldSelector=spec.title=one`)).body.total).toBe(1);
    expect((await gql(gw, `{ ${field} { total } }`)).data[field].total).toBe(1);
    expect((await call(gw, 'GET', '/apis/console.api.toggle.example.com/v1/ping')).body).toEqual({ pong: true });
    expect((await call(gw, 'GET', '/api/v1alpha1/roles/toggle-view-gadgets')).status).toBe(200);
    const log = await readFile(join(dir.dir, 'order.log'), 'utf8');
    expect(log.split('\n').filter((l) => l.endsWith(' toggle'))).toEqual(['start toggle', 'stop toggle', 'start toggle']);
  });

  it('a FAILED plugin is retried when its spec changes, and stays FAILED while broken', async () => {
    expect((await call(gw, 'PATCH', `${PLUGINS}/bb-broken`, { spec: { enabled: false } }, MERGE)).status).toBe(200);
    await waitPhase(gw, 'bb-broken', 'STOPPED');
    expect((await call(gw, 'PATCH', `${PLUGINS}/bb-broken`, { spec: { enabled: true } }, MERGE)).status).toBe(200);
    const p = await eventually(async () => {
      const x = await plugin(gw, 'bb-broken');
      expect(x.status.phase).toBe('FAILED');
      expect(x.status.reason).toContain('cannot reach the moon');
      return x;
    });
    expect(p.spec.enabled).toBe(true);
  });
});
