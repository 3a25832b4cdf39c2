/**
 * docs/API.md §6 "No escalation", plugin bundles (issue 35, finding 6), on both stores: a
 * plugin's role templates are written as the system, so the user who enables it answers for
 * them. A template that aggregates into anonymous (or authenticated), or grants beyond the
 * plugin's own groups and UI permissions, needs that user to hold what it grants: else the write
 * enabling it is refused with 403 and nothing changes. Templates kept to the plugin need only the
 * right to manage plugins; plugins the gateway enables at start are the operator's choice.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANONYMOUSLY, basicAuth, call, startTestGateway, STORES, type TestGateway } from '../helpers/gateway.js';
import { bind } from '../helpers/rbac.js';
import { codes, gql } from '../graphql/helpers.js';
import { manifest, PLUGINS, pluginsDir, waitPhase, type PluginsDir } from '../plugins/fixtures.js';

const MERGE = { 'content-type': 'application/merge-patch+json' };

const template = (name: string, labels: Record<string, string>, rules: string, ui?: string) =>
  [
    'apiVersion: v1alpha1',
    'kind: Role',
    'metadata:',
    `  name: ${name}`,
    '  labels:',
    '    svc.run/role-template: "true"',
    ...Object.entries(labels).map(([k, v]) => `    ${k}: "${v}"`),
    ...(ui ? ['  annotations:', `    rbac.authorization.svc.run/ui-permissions: '${JSON.stringify([ui])}'`] : []),
    'rules:',
    rules,
  ].join('\n') + '\n';

const TO_ANONYMOUS = { 'rbac.authorization.svc.run/aggregate-to-anonymous': 'true' };
const EVERYTHING = ['  - apiGroups: ["*"]', '    resources: ["*"]', '    verbs: ["*"]', '  - nonResourceURLs: ["*"]', '    verbs: ["*"]'].join('\n');
const ownRead = (plugin: string) => [`  - apiGroups: [${plugin}.example.com]`, '    resources: [things]', '    verbs: [get, list]'].join('\n');

describe.each(STORES)('plugin bundles cannot escalate (%s)', (kind) => {
  let dir: PluginsDir;
  let gw: TestGateway;
  let pm: { authorization: string };

  beforeAll(async () => {
    dir = await pluginsDir();
    // YAML-only plugins, stopped until someone enables them
    await dir.write('evil', { 'plugin.yaml': manifest({ name: 'evil', enabled: false }), 'extensions/roles.yaml': template('evil-evil', TO_ANONYMOUS, EVERYTHING) });
    await dir.write('reach', {
      'plugin.yaml': manifest({ name: 'reach', enabled: false }),
      'extensions/roles.yaml': template('reach-users', {}, ['  - apiGroups: [""]', '    resources: [users]', '    verbs: [get, list]'].join('\n')),
    });
    // no rules of its own: it reaches super-role through its dependencies
    await dir.write('sneaky', {
      'plugin.yaml': manifest({ name: 'sneaky', enabled: false }),
      'extensions/roles.yaml': template('sneaky-public', TO_ANONYMOUS, '  []').replace(
        'rules:',
        "  annotations:\n    rbac.authorization.svc.run/dependencies: '[\"super-role\"]'\nrules:",
      ),
    });
    await dir.write('good', {
      'plugin.yaml': manifest({ name: 'good', enabled: false }),
      'extensions/roles.yaml': template('good-view', {}, ownRead('good'), 'plugin:good:view'),
    });
    // enabled by the gateway at start: the operator put it there
    await dir.write('booted', { 'plugin.yaml': manifest({ name: 'booted' }), 'extensions/roles.yaml': template('booted-public', TO_ANONYMOUS, ownRead('booted')) });
    gw = await startTestGateway(kind, { pluginsDir: dir.dir });
    expect((await call(gw, 'POST', '/api/v1alpha1/users', { metadata: { name: 'pm' }, spec: { password: 'pm-password-1' } })).status).toBe(201);
    expect((await bind(gw, 'pm', 'system-plugins-manage')).status).toBe(201);
    pm = { authorization: basicAuth('pm', 'pm-password-1') };
  });
  afterAll(async () => {
    await gw?.dispose();
    await dir?.remove();
  });

  async function anonymousLocked(): Promise<void> {
    expect([401, 403]).toContain((await call(gw, 'GET', '/api/v1alpha1/users', undefined, ANONYMOUSLY)).status);
    expect([401, 403]).toContain((await call(gw, 'GET', '/metrics', undefined, ANONYMOUSLY)).status);
  }

  it('a plugin manager cannot enable a template that gives anonymous everything: 403, nothing changes', async () => {
    await waitPhase(gw, 'evil', 'STOPPED');
    const r = await call(gw, 'PATCH', `${PLUGINS}/evil`, { spec: { enabled: true } }, { ...pm, ...MERGE });
    expect(r.status).toBe(403);
    expect(r.body.detail).toMatch(/evil-evil/);
    expect(r.body.detail).toMatch(/anonymous/);
    const current = (await call(gw, 'GET', `${PLUGINS}/evil`)).body;
    expect(current.spec.enabled).toBe(false);
    expect((await call(gw, 'PUT', `${PLUGINS}/evil`, { ...current, spec: { ...current.spec, enabled: true } }, pm)).status).toBe(403);
    const mutation = await gql(gw, 'mutation { pluginSvcRun_v1alpha1_patchPlugin(name: "evil", patch: { spec: { enabled: true } }) { metadata { name } } }', undefined, pm);
    expect(codes(mutation)).toEqual(['FORBIDDEN']);
    await new Promise((r) => setTimeout(r, 300));
    expect((await waitPhase(gw, 'evil', 'STOPPED')).spec.enabled).toBe(false);
    expect((await call(gw, 'GET', '/api/v1alpha1/roles/evil-evil')).status).toBe(404);
    await anonymousLocked();
  });

  it('nor one that grants beyond the plugin\'s own groups, by its rules or its dependencies', async () => {
    const r = await call(gw, 'PATCH', `${PLUGINS}/reach`, { spec: { enabled: true } }, { ...pm, ...MERGE });
    expect(r.status).toBe(403);
    expect(r.body.detail).toMatch(/reach-users.*beyond/);
    expect((await call(gw, 'GET', '/api/v1alpha1/roles/reach-users')).status).toBe(404);
    const sneaky = await call(gw, 'PATCH', `${PLUGINS}/sneaky`, { spec: { enabled: true } }, { ...pm, ...MERGE });
    expect(sneaky.status).toBe(403);
    expect(sneaky.body.detail).toMatch(/sneaky-public/);
    await anonymousLocked();
  });

  it('templates kept to the plugin\'s groups and UI permissions need only the right to manage plugins', async () => {
    expect((await call(gw, 'PATCH', `${PLUGINS}/good`, { spec: { enabled: true } }, { ...pm, ...MERGE })).status).toBe(200);
    await waitPhase(gw, 'good', 'STARTED');
    expect((await call(gw, 'GET', '/api/v1alpha1/roles/good-view')).status).toBe(200);
  });

  it('the gateway enables folder plugins at start; re-enabling a public template needs its rules', async () => {
    await waitPhase(gw, 'booted', 'STARTED');
    expect((await call(gw, 'GET', '/api/v1alpha1/roles/booted-public')).status).toBe(200);
    expect((await call(gw, 'PATCH', `${PLUGINS}/booted`, { spec: { enabled: false } }, { ...pm, ...MERGE })).status).toBe(200);
    await waitPhase(gw, 'booted', 'STOPPED');
    const again = await call(gw, 'PATCH', `${PLUGINS}/booted`, { spec: { enabled: true } }, { ...pm, ...MERGE });
    expect(again.status).toBe(403);
    expect(again.body.detail).toMatch(/booted-public/);
    // the administrator holds those rules
    expect((await call(gw, 'PATCH', `${PLUGINS}/booted`, { spec: { enabled: true } }, MERGE)).status).toBe(200);
    await waitPhase(gw, 'booted', 'STARTED');
  });

  it('the administrator, who holds everything, may enable the evil template (and stop it again)', async () => {
    expect((await call(gw, 'PATCH', `${PLUGINS}/evil`, { spec: { enabled: true } }, MERGE)).status).toBe(200);
    await waitPhase(gw, 'evil', 'STARTED');
    expect((await call(gw, 'GET', '/api/v1alpha1/users', undefined, ANONYMOUSLY)).status).toBe(200);
    expect((await call(gw, 'PATCH', `${PLUGINS}/evil`, { spec: { enabled: false } }, MERGE)).status).toBe(200);
    await waitPhase(gw, 'evil', 'STOPPED');
    await anonymousLocked();
  });
});
