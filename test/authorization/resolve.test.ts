/** Role resolution (docs/API.md §6 "A user's roles"): bindings, anonymous, authenticated, dependencies, aggregation, cycles. */
import { describe, expect, it } from 'vitest';
import { userCaller, ANONYMOUS } from '../../src/identity/caller.js';
import type { ApiObject } from '../../src/store/object.js';
import { directRoles, resolveRoles, type RoleSource } from '../../src/authorization/resolve.js';

const role = (name: string, opts: { deps?: string[]; aggregateTo?: string[]; ui?: string[]; verbs?: string[]; deleting?: boolean } = {}): ApiObject => ({
  apiVersion: 'v1alpha1',
  kind: 'Role',
  metadata: {
    name,
    labels: Object.fromEntries((opts.aggregateTo ?? []).map((r) => [`rbac.authorization.svc.run/aggregate-to-${r}`, 'true'])),
    annotations: {
      ...(opts.deps ? { 'rbac.authorization.svc.run/dependencies': JSON.stringify(opts.deps) } : {}),
      ...(opts.ui ? { 'rbac.authorization.svc.run/ui-permissions': JSON.stringify(opts.ui) } : {}),
    },
    ...(opts.deleting ? { deletionTimestamp: '2026-01-01T00:00:00.000Z' } : {}),
  },
  rules: [{ apiGroups: ['g'], resources: [name], verbs: opts.verbs ?? ['get'] }],
});

function source(roles: ApiObject[], bindings: Record<string, string[]> = {}): RoleSource {
  const byName = new Map(roles.map((r) => [r.metadata.name, r]));
  return {
    role: async (n) => byName.get(n),
    aggregatedInto: async (n) => roles.filter((r) => r.metadata.labels?.[`rbac.authorization.svc.run/aggregate-to-${n}`] === 'true'),
    boundRoles: async (u) => bindings[u] ?? [],
  };
}

describe('role resolution', () => {
  it('starts from bindings plus anonymous and authenticated for logged-in users, anonymous only otherwise', async () => {
    const s = source([], { ann: ['editor'] });
    expect(await directRoles(s, userCaller('ann', 'basic'))).toEqual(['editor', 'anonymous', 'authenticated']);
    expect(await directRoles(s, ANONYMOUS)).toEqual(['anonymous']);
  });

  it('follows dependencies and aggregate-to-<role> templates to a fixpoint', async () => {
    const s = source([
      role('anonymous'),
      role('manage', { deps: ['view'], ui: ['plugin:p:manage'] }),
      role('view', { ui: ['plugin:p:view'] }),
      role('extra', { aggregateTo: ['view'] }),
      role('extra-dep', { aggregateTo: ['extra'] }),
      role('public', { aggregateTo: ['anonymous'], ui: ['plugin:p:public'] }),
      role('unrelated', { aggregateTo: ['nobody'] }),
    ]);
    const r = await resolveRoles(s, ['manage', 'anonymous']);
    expect(r.roles.sort()).toEqual(['anonymous', 'extra', 'extra-dep', 'manage', 'public', 'view']);
    expect(r.rules.map((x) => x.resources![0]).sort()).toEqual(['anonymous', 'extra', 'extra-dep', 'manage', 'public', 'view']);
    expect(r.uiPermissions.sort()).toEqual(['plugin:p:manage', 'plugin:p:public', 'plugin:p:view']);
  });

  it('is not troubled by cycles of dependencies or aggregation', async () => {
    const s = source([role('a', { deps: ['b'] }), role('b', { deps: ['a'], aggregateTo: ['c'] }), role('c', { aggregateTo: ['a'] })]);
    const r = await resolveRoles(s, ['a']);
    expect(r.roles.sort()).toEqual(['a', 'b', 'c']);
  });

  it('ignores missing roles, roles being deleted and malformed annotations', async () => {
    const broken = role('broken');
    broken.metadata.annotations = { 'rbac.authorization.svc.run/dependencies': 'not json' };
    const s = source([role('gone', { deleting: true }), broken, role('x', { deps: ['missing', 'gone', 'broken'] })]);
    const r = await resolveRoles(s, ['x', 'nope']);
    expect(r.roles).toEqual(['x', 'broken']);
  });

  it('resolves a role as it would be after a write (override), for admission', async () => {
    const s = source([role('base'), role('boss')]);
    const candidate = role('base', { deps: ['boss'] });
    expect((await resolveRoles(s, ['base'])).roles).toEqual(['base']);
    expect((await resolveRoles(s, ['base'], candidate)).roles).toEqual(['base', 'boss']);
    const template = role('new-template', { aggregateTo: ['base'] });
    expect((await resolveRoles(s, ['base'], template)).roles).toEqual(['base', 'new-template']);
  });
});
