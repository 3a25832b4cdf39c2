/**
 * Built-in roles stored by an earlier version are brought up to date on the next start, as
 * Kubernetes reconciles its bootstrap roles: missing rules and UI permissions come back, rules an
 * operator added stay, and `rbac.authorization.svc.run/autoupdate: "false"` opts a role out.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { call, STORES, startTestGateway, type TestGateway } from '../helpers/gateway.js';

const ROLES = '/api/v1alpha1/roles';
const UI = 'rbac.authorization.svc.run/ui-permissions';
const EXTRA = { apiGroups: ['crm.example.net'], resources: ['people'], verbs: ['get'] };

describe.each(STORES)('built-in roles are reconciled on start (%s)', (kind) => {
  let gw: TestGateway | undefined;
  afterAll(() => gw?.dispose());

  it('restores what an older version lacked, keeps what an operator added, honours autoupdate=false', async () => {
    gw = await startTestGateway(kind);
    const original = (await call(gw, 'GET', `${ROLES}/authenticated`)).body;
    const users = (await call(gw, 'GET', `${ROLES}/system-users-view`)).body;
    // As an older version stored them: the authenticated role without its last rule plus an
    // operator's own rule; a template without its UI permission.
    const trimmed = { ...original, rules: [...original.rules.slice(0, -1), EXTRA] };
    expect((await call(gw, 'PUT', `${ROLES}/authenticated`, trimmed)).status).toBe(200);
    const noUi = { ...users, metadata: { ...users.metadata, annotations: { ...users.metadata.annotations, [UI]: '["legacy:ui"]' } } };
    expect((await call(gw, 'PUT', `${ROLES}/system-users-view`, noUi)).status).toBe(200);
    const plugins = (await call(gw, 'GET', `${ROLES}/system-plugins-view`)).body;
    const optedOut = {
      ...plugins,
      rules: [EXTRA],
      metadata: { ...plugins.metadata, annotations: { ...plugins.metadata.annotations, 'rbac.authorization.svc.run/autoupdate': 'false' } },
    };
    expect((await call(gw, 'PUT', `${ROLES}/system-plugins-view`, optedOut)).status).toBe(200);

    gw = await gw.restart();
    const auth = (await call(gw, 'GET', `${ROLES}/authenticated`)).body;
    for (const rule of original.rules) expect(auth.rules).toContainEqual(rule);
    expect(auth.rules).toContainEqual(EXTRA);
    const view = (await call(gw, 'GET', `${ROLES}/system-users-view`)).body;
    expect(JSON.parse(view.metadata.annotations[UI]).sort()).toEqual(['legacy:ui', 'system:users:view']);
    const kept = (await call(gw, 'GET', `${ROLES}/system-plugins-view`)).body;
    expect(kept.rules).toEqual([EXTRA]);

    // Up to date: a further start writes nothing.
    const version = auth.metadata.version;
    gw = await gw.restart();
    expect((await call(gw, 'GET', `${ROLES}/authenticated`)).body.metadata.version).toBe(version);
  });
});
