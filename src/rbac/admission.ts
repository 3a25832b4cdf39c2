/**
 * RBAC safety checks on writes of Role and RoleBinding objects (docs/API.md §6, k8s
 * pkg/registry/rbac/escalation_check.go and role/policybased):
 *   - built-in immutable roles (super-role) cannot be changed or deleted: 403;
 *   - a binding's roleRef.name must name an existing role: 422;
 *   - no escalation: creating or updating a role needs every permission it grants (its rules,
 *     dependencies and aggregated templates), or the verb `escalate` on roles; creating or
 *     updating a binding needs the bound role's permissions, or the verb `bind` on roles;
 *   - no takeover: writing another user (a password reset, disabling, deleting, or creating a
 *     user that existing bindings already name) needs every permission that user holds, or the
 *     verb `escalate` on users; else `update users` would let anyone become the administrator.
 */
import { userCaller } from '../security/identity.js';
import { Forbidden, Invalid } from '../errors/index.js';
import type { AdmissionRequest, KindHooks } from '../registry/hooks.js';
import type { ApiObject } from '../store/object.js';
import { IMMUTABLE_ROLES } from './builtin-roles.js';
import type { PolicyRule } from './match.js';
import type { RbacAuthorizer } from './rbac-authorizer.js';

// --- coverage: does a set of rules grant everything one rule grants? ---------------------------

const listCovers = (owner: readonly string[] | undefined, v: string) => !!owner && (owner.includes('*') || owner.includes(v));

function resourceCovers(owner: string, r: string): boolean {
  if (owner === '*' || owner === r) return true;
  return owner.startsWith('*/') && r.includes('/') && r.endsWith(owner.slice(1));
}

function urlCovers(owner: string, url: string): boolean {
  if (owner === '*' || owner === url) return true;
  if (!owner.endsWith('/*') || url === '*') return false;
  const prefix = owner.slice(0, -1);
  return url.length > prefix.length && url.startsWith(prefix);
}

/** True when `owner` rules together allow every request `rule` allows. */
export function covers(owner: readonly PolicyRule[], rule: PolicyRule): boolean {
  const verbs = rule.verbs ?? [];
  if (rule.nonResourceURLs?.length) {
    for (const url of rule.nonResourceURLs) {
      for (const verb of verbs) {
        const ok = owner.some(
          (o) => (o.verbs?.includes('*') || (verb !== '*' && listCovers(o.verbs, verb))) && (o.nonResourceURLs ?? []).some((u) => urlCovers(u, url)),
        );
        if (!ok) return false;
      }
    }
  }
  if (rule.resources?.length) {
    const names = rule.resourceNames?.length ? rule.resourceNames : [undefined];
    for (const group of rule.apiGroups ?? []) {
      for (const resource of rule.resources) {
        for (const verb of verbs) {
          for (const name of names) {
            const ok = owner.some(
              (o) =>
                (o.verbs?.includes('*') || (verb !== '*' && listCovers(o.verbs, verb))) &&
                (o.apiGroups?.includes('*') || (group !== '*' && listCovers(o.apiGroups, group))) &&
                (o.resources ?? []).some((r) => resourceCovers(r, resource)) &&
                (!o.resourceNames?.length || (name !== undefined && o.resourceNames.includes(name))),
            );
            if (!ok) return false;
          }
        }
      }
    }
  }
  return true;
}

function uncovered(owner: readonly PolicyRule[], rules: readonly PolicyRule[]): PolicyRule | undefined {
  return rules.find((r) => !covers(owner, r));
}

// --- hooks ---------------------------------------------------------------------------------------

async function mayOnRoles(req: AdmissionRequest, verb: 'escalate' | 'bind', name: string, resource = 'roles'): Promise<boolean> {
  const d = await req.authorizer.authorize({
    caller: req.caller,
    verb,
    isResourceRequest: true,
    apiGroup: '',
    apiVersion: 'v1alpha1',
    resource,
    subresource: '',
    name,
    path: '',
  });
  return d.allowed;
}

const describeRule = (r: PolicyRule) => JSON.stringify(r);

export function roleAdmission(rbac: RbacAuthorizer): KindHooks['admit'] {
  return async (req) => {
    const name = (req.old ?? req.object)!.metadata.name;
    if (IMMUTABLE_ROLES.has(name) && req.verb !== 'create') {
      throw new Forbidden(`role "${name}" is built in: it cannot be edited or deleted`);
    }
    if (req.verb === 'delete' || !req.object) return;
    if (await mayOnRoles(req, 'escalate', name)) return;
    const [granted, held] = await Promise.all([rbac.resolveRole(name, req.object), rbac.resolve(req.caller)]);
    const missing = uncovered(held.rules, granted.rules);
    if (missing) {
      throw new Forbidden(
        `user "${req.caller.username}" cannot ${req.verb} role "${name}": it would grant ${describeRule(missing)}, which the user does not hold (the verb "escalate" on roles allows it)`,
      );
    }
  };
}

const roleRefName = (obj: ApiObject) => (obj.roleRef as { name?: unknown } | undefined)?.name;

export function bindingAdmission(rbac: RbacAuthorizer): KindHooks['admit'] {
  return async (req) => {
    if (req.verb === 'delete' || !req.object) return;
    const ref = roleRefName(req.object);
    if (typeof ref !== 'string') return; // schema validation reports it
    if (ref === roleRefName(req.old ?? ({} as ApiObject)) && sameSubjects(req.object, req.old)) return; // nothing granted anew
    const role = await rbac.source.role(ref);
    if (!role || role.metadata.deletionTimestamp) {
      throw new Invalid(`roleRef.name: role "${ref}" does not exist`, [{ field: 'roleRef.name', message: `role "${ref}" does not exist` }]);
    }
    if (await mayOnRoles(req, 'bind', ref)) return;
    const [granted, held] = await Promise.all([rbac.resolveRole(ref), rbac.resolve(req.caller)]);
    const missing = uncovered(held.rules, granted.rules);
    if (missing) {
      throw new Forbidden(
        `user "${req.caller.username}" cannot bind role "${ref}": it grants ${describeRule(missing)}, which the user does not hold (the verb "bind" on roles allows it)`,
      );
    }
  };
}

function sameSubjects(a: ApiObject, b: ApiObject | undefined): boolean {
  return !!b && JSON.stringify(a.subjects ?? []) === JSON.stringify(b.subjects ?? []);
}

export function userAdmission(rbac: RbacAuthorizer): KindHooks['admit'] {
  return async (req) => {
    const name = (req.old ?? req.object)!.metadata.name;
    if (req.caller.via !== 'system' && req.caller.username === name) return; // one's own account
    if (await mayOnRoles(req, 'escalate', name, 'users')) return;
    const [target, held] = await Promise.all([rbac.resolve(userCaller(name, 'basic')), rbac.resolve(req.caller)]);
    const missing = uncovered(held.rules, target.rules);
    if (missing) {
      throw new Forbidden(
        `user "${req.caller.username}" cannot ${req.verb} user "${name}": that user holds ${describeRule(missing)}, which the caller does not (the verb "escalate" on users allows it)`,
      );
    }
  };
}
