/**
 * Role resolution (docs/API.md §6 "A user's roles"): the roles named by bindings whose subjects
 * include the user, plus `anonymous`, plus `authenticated` when logged in; then, to a fixpoint,
 * the roles named in each held role's dependencies annotation and every role labelled
 * `aggregate-to-<role>` for a role already held. A role is visited once, so cycles are
 * harmless. Roles that do not exist (or are being deleted) grant nothing and are not listed.
 */
import type { Caller } from '../identity/caller.js';
import type { ApiObject } from '../store/object.js';
import type { PolicyRule } from './match.js';

export const ANONYMOUS_ROLE = 'anonymous';
export const AUTHENTICATED_ROLE = 'authenticated';
export const SUPER_ROLE = 'super-role';

export const LABEL_ROLE_TEMPLATE = 'svc.run/role-template';
export const LABEL_HIDDEN = 'svc.run/hidden';
export const AGGREGATE_PREFIX = 'rbac.authorization.svc.run/aggregate-to-';
export const ANNOTATION_DEPENDENCIES = 'rbac.authorization.svc.run/dependencies';
export const ANNOTATION_UI_PERMISSIONS = 'rbac.authorization.svc.run/ui-permissions';
export const ANNOTATION_MODULE = 'rbac.authorization.svc.run/module';
export const ANNOTATION_DISPLAY_NAME = 'rbac.authorization.svc.run/display-name';

export const aggregateLabel = (role: string) => `${AGGREGATE_PREFIX}${role}`;

/** Where roles and bindings come from (rbac-authorizer.ts reads them from the store). */
export interface RoleSource {
  /** The role object by name, or undefined. */
  role(name: string): Promise<ApiObject | undefined>;
  /** Roles labelled `aggregate-to-<name>: "true"`. */
  aggregatedInto(name: string): Promise<ApiObject[]>;
  /** roleRef names of the bindings whose subjects include this user. */
  boundRoles(username: string): Promise<string[]>;
}

export interface ResolvedRoles {
  /** Every role held after resolution, in discovery order. */
  roles: string[];
  rules: PolicyRule[];
  /** The ui-permissions annotations of those roles, de-duplicated, in discovery order. */
  uiPermissions: string[];
}

/** A JSON array of strings in an annotation; anything else counts as empty. */
export function annotationList(obj: ApiObject, key: string): string[] {
  const raw = obj.metadata.annotations?.[key];
  if (typeof raw !== 'string') return [];
  try {
    const parsed: unknown = JSON.parse(raw);
    return Array.isArray(parsed) ? parsed.filter((v): v is string => typeof v === 'string') : [];
  } catch {
    return [];
  }
}

export const rulesOf = (role: ApiObject): PolicyRule[] => (Array.isArray(role.rules) ? (role.rules as PolicyRule[]) : []);

/** The roles a caller starts from, before dependencies and aggregation. */
export async function directRoles(source: RoleSource, caller: Caller): Promise<string[]> {
  if (!caller.authenticated) return [ANONYMOUS_ROLE];
  return [...(await source.boundRoles(caller.username)), ANONYMOUS_ROLE, AUTHENTICATED_ROLE];
}

/**
 * `base` with `extra` roles written over it (by name), as they would be after a write: admission
 * resolves a role being written, or a plugin bundle's templates, before they are stored.
 */
export function overlaySource(base: RoleSource, extra: readonly ApiObject[]): RoleSource {
  if (extra.length === 0) return base;
  const byName = new Map(extra.map((r) => [r.metadata.name, r]));
  return {
    role: async (name) => byName.get(name) ?? (await base.role(name)),
    aggregatedInto: async (name) => [
      ...(await base.aggregatedInto(name)).filter((r) => !byName.has(r.metadata.name)),
      ...extra.filter((r) => r.metadata.labels?.[aggregateLabel(name)] === 'true'),
    ],
    boundRoles: (username) => base.boundRoles(username),
  };
}

/** Resolves `start` to a fixpoint; `override` replaces (or adds) one role object (see overlaySource). */
export async function resolveRoles(base: RoleSource, start: readonly string[], override?: ApiObject): Promise<ResolvedRoles> {
  const source = override ? overlaySource(base, [override]) : base;
  const seen = new Set<string>();
  const roles: string[] = [];
  const rules: PolicyRule[] = [];
  const ui = new Set<string>();
  const queue = [...start];
  while (queue.length) {
    const name = queue.shift()!;
    if (seen.has(name)) continue;
    seen.add(name);
    const role = await source.role(name);
    if (!role || role.metadata.deletionTimestamp) continue;
    roles.push(name);
    rules.push(...rulesOf(role));
    for (const p of annotationList(role, ANNOTATION_UI_PERMISSIONS)) ui.add(p);
    for (const dep of annotationList(role, ANNOTATION_DEPENDENCIES)) if (!seen.has(dep)) queue.push(dep);
    for (const t of await source.aggregatedInto(name)) if (!seen.has(t.metadata.name)) queue.push(t.metadata.name);
  }
  return { roles, rules, uiPermissions: [...ui] };
}
