/**
 * Every refusal of issue 9 point 2 on a real gateway (both stores): plugins from SVC_PLUGINS_DIR
 * that use a reserved group, bundle objects with unprefixed or reserved label keys, role
 * templates not named after the plugin, custom routes outside the plugin's groups, under /api
 * or shadowing a generated route. Each ends FAILED with a reason naming the file (and the
 * document); nothing of it is served or stored, and every other plugin keeps running.
 */
import { tmpdir } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, STORES, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { manifest, plugin, pluginsDir, type PluginsDir } from './fixtures.js';

const role = (name: string, labels: Record<string, string> = { 'svc.run/role-template': 'true' }) => `apiVersion: v1alpha1
kind: Role
metadata:
  name: ${name}
  labels: ${JSON.stringify(labels)}
rules:
  - apiGroups: [x.example.com]
    resources: [things]
    verbs: [get]
`;
const thing = (group: string, name: string, labels: Record<string, string>) => `apiVersion: ${group}/v1
kind: Thing
metadata:
  name: ${name}
  labels: ${JSON.stringify(labels)}
spec:
  title: ${name}
`;
const routes = (...paths: string[]) =>
  `export default { routes: [${paths.map((p) => `{ method: 'GET', path: '${p}', handler: () => new Response('hi') }`).join(', ')}] };\n`;

/** name → files, and what its reason must contain. */
const BROKEN: Record<string, { files: Record<string, string>; reason: string[] }> = {
  'r-core': { files: { 'plugin.yaml': manifest({ name: 'r-core', group: '' }) }, reason: ['plugin.yaml spec.models[0]', 'reserved group ""'] },
  'r-svc': { files: { 'plugin.yaml': manifest({ name: 'r-svc', group: 'svc.run' }) }, reason: ['plugin.yaml spec.models[0]', 'reserved group "svc.run"'] },
  'r-platform': {
    // Only plugins shipped inside the gateway may use *.svc.run, whatever a manifest says.
    files: { 'plugin.yaml': manifest({ name: 'r-platform', group: 'extra.svc.run' }) },
    reason: ['plugin.yaml spec.models[0]', '"extra.svc.run"', 'reserved for the platform'],
  },
  'r-label': {
    files: {
      'plugin.yaml': manifest({ name: 'r-label' }),
      'extensions/things.yaml': [thing('r-label.example.com', 'good', { 'r-label.example.com/team': 'a' }), thing('r-label.example.com', 'bad', { team: 'a' })].join('---\n'),
    },
    reason: ['extensions/things.yaml document 2', 'team'],
  },
  'r-reserved': {
    files: {
      'plugin.yaml': manifest({ name: 'r-reserved' }),
      // file name says nothing: the type comes from apiVersion and kind
      'src/main/resources/extensions/whatever.yaml': thing('r-reserved.example.com', 'bad', { 'svc.run/owner': 'me' }),
    },
    reason: ['src/main/resources/extensions/whatever.yaml document 1', 'svc.run/owner'],
  },
  'r-subreserved': {
    files: { 'plugin.yaml': manifest({ name: 'r-subreserved' }), 'extensions/a.yaml': thing('r-subreserved.example.com', 'bad', { 'x.svc.run/owner': 'me' }) },
    reason: ['extensions/a.yaml document 1', 'x.svc.run/owner'],
  },
  'r-role': {
    files: { 'plugin.yaml': manifest({ name: 'r-role' }), 'extensions/roles.yaml': [role('r-role-view'), role('viewer-of-things')].join('---\n') },
    reason: ['extensions/roles.yaml document 2', 'viewer-of-things', 'r-role-'],
  },
  'r-route-group': {
    files: { 'plugin.yaml': manifest({ name: 'r-route-group' }), 'index.mjs': routes('/apis/console.api.people.example.com/v1alpha1/mine') },
    reason: ['index.mjs routes[0]', 'does not own group "console.api.people.example.com"'],
  },
  'r-route-api': {
    files: { 'plugin.yaml': manifest({ name: 'r-route-api' }), 'index.mjs': routes('/apis/api.r-route-api.example.com/v1/ok', '/api/v1alpha1/things') },
    reason: ['index.mjs routes[1]', '/api'],
  },
  'r-route-shadow': {
    files: { 'plugin.yaml': manifest({ name: 'r-route-shadow' }), 'index.mjs': routes('/apis/r-route-shadow.example.com/v1/things/{name}') },
    reason: ['index.mjs routes[0]', 'shadow the generated API'],
  },
  // Files are named relative to the plugin folder, also in the loaders' own messages.
  'r-yaml': { files: { 'plugin.yaml': 'metadata: [unclosed\n' }, reason: ['plugin.yaml: invalid YAML'] },
  'r-import': {
    // (the missing module's name is made unique per gateway below: vitest's module runner
    // remembers a failed import by specifier, with the first importer's path in its message)
    files: { 'plugin.yaml': manifest({ name: 'r-import' }), 'index.mjs': "import './lib/missing-$RUN.mjs';\nexport default {};\n" },
    reason: ['index.mjs: cannot load', './lib/missing-', "imported from 'index.mjs'"],
  },
  'r-export': {
    files: { 'plugin.yaml': manifest({ name: 'r-export' }), 'index.mjs': 'export default 42;\n' },
    reason: ['index.mjs: the default export must be an object'],
  },
};

describe.each(STORES)('plugin rules (%s)', (kind) => {
  let dir: PluginsDir;
  let gw: TestGateway;
  beforeAll(async () => {
    dir = await pluginsDir();
    for (const [name, p] of Object.entries(BROKEN)) {
      await dir.write(name, Object.fromEntries(Object.entries(p.files).map(([f, text]) => [f, text.replace('$RUN', kind)])));
    }
    await dir.write('r-fine', {
      'plugin.yaml': manifest({ name: 'r-fine' }),
      // the platform's documented keys are allowed on role templates
      'extensions/roles.yaml': role('r-fine-view', { 'svc.run/role-template': 'true', 'svc.run/hidden': 'true', 'rbac.authorization.svc.run/aggregate-to-editor': 'true' }),
      'index.mjs': routes('/apis/uc.api.r-fine.example.com/v1/hello', '/apis/api.r-fine.example.com/v1/hello', '/apis/r-fine.example.com/v1/hello'),
    });
    gw = await startTestGateway(kind, { pluginsDir: dir.dir });
  });
  afterAll(async () => {
    await gw?.dispose();
    await dir?.remove();
  });

  it.each(Object.keys(BROKEN))('%s is FAILED with a reason naming the file and document', async (name) => {
    const p = await plugin(gw, name);
    expect(p.status.phase).toBe('FAILED');
    for (const part of BROKEN[name]!.reason) expect(p.status.reason).toContain(part);
    // never an absolute path: not the plugins folder, not a file URL, not the temp directory
    expect(p.status.reason).not.toContain(dir.dir);
    expect(p.status.reason).not.toContain('file:');
    expect(p.status.reason).not.toContain(tmpdir());
  });

  it('a refused plugin serves nothing and leaves nothing stored', async () => {
    for (const name of Object.keys(BROKEN).filter((n) => n.startsWith('r-') && !['r-core', 'r-svc', 'r-platform'].includes(n))) {
      expect((await call(gw, 'GET', `/apis/${name}.example.com/v1/things`)).status, name).toBe(404);
    }
    // r-label's first document was valid and written before the second was refused: undone
    const roles = await call(gw, 'GET', '/api/v1alpha1/roles?labelSelector=plugin.svc.run/plugin-name=r-role');
    expect(roles.body.items).toEqual([]);
    expect((await call(gw, 'GET', '/apis/api.r-route-api.example.com/v1/ok')).status).toBe(404);
    expect((await call(gw, 'GET', '/apis/extra.svc.run/v1/things')).status).toBe(404);
  });

  it('the gateway and every other plugin keep running', async () => {
    expect((await plugin(gw, 'r-fine')).status.phase).toBe('STARTED');
    expect((await plugin(gw, 'content')).status.phase).toBe('STARTED');
    const hello = await call(gw, 'GET', '/apis/uc.api.r-fine.example.com/v1/hello');
    expect(hello.status).toBe(200);
    expect(hello.body).toBe('hi');
    const r = await call(gw, 'GET', '/api/v1alpha1/roles/r-fine-view');
    expect(r.status).toBe(200);
    expect(r.body.metadata.labels['plugin.svc.run/plugin-name']).toBe('r-fine');
    expect((await call(gw, 'GET', '/healthz')).status).toBe(200);
  });
});
