/**
 * RBAC safety checks on writes of Role, RoleBinding and User objects (docs/API.md §6, k8s
 * pkg/registry/rbac/escalation_check.go and role/policybased):
 *   - built-in immutable roles (super-role) cannot be changed or deleted: 403;
 *   - a binding's roleRef.name must name an existing role: 422;
 *   - no escalation: creating or updating a role needs every permission it grants (its rules,
 *     dependencies and aggregated templates), or the verb `escalate` on roles. Its
 *     `aggregate-to-<role>` labels hand those rules to every holder of `<role>` (anonymous and
 *     authenticated included), so the same check covers a label added by an update. Creating or
 *     updating a binding needs the bound role's permissions, or the verb `bind` on roles;
 *   - no takeover: changing another user's credentials (a new password, disabling or enabling
 *     them), deleting them, or creating a user (whom existing bindings may already name) needs
 *     every permission that user holds (the first administrator always holds super-role's), or
 *     the verb `impersonate` on users; else `update users` would let anyone become the
 *     administrator. Other fields (displayName, email) need only the ordinary verb;
 *   - plugin bundles (`checkBundleRoles`): a user's enabling of a plugin needs them to hold what
 *     its role templates grant beyond the plugin, or to every caller.
 * None of `escalate`, `bind` and `impersonate` is granted by `*` (match.ts ESCALATION_VERBS), and
 * `covers` below agrees: holding `*` does not count as holding them.
 */
import { userCaller, type Caller } from '../identity/caller.js';
import { Forbidden, Invalid } from '../errors/index.js';
import type { AdmissionRequest, KindHooks } from '../registry/hooks.js';
import { isPlainObject, type ApiObject } from '../store/object.js';
import { IMMUTABLE_ROLES } from './builtin-roles.js';
import { verbsGrant, type PolicyRule } from './match.js';
import type { RbacAuthorizer } from './rbac-authorizer.js';
import { AGGREGATE_PREFIX, ANONYMOUS_ROLE, AUTHENTICATED_ROLE, SUPER_ROLE } from './resolve.js';

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
          (o) => verbsGrant(o.verbs, verb) && (o.nonResourceURLs ?? []).some((u) => urlCovers(u, url)),
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
                verbsGrant(o.verbs, verb) &&
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

async function mayOnRoles(req: AdmissionRequest, verb: 'escalate' | 'bind' | 'impersonate', name: string, resource = 'roles'): Promise<boolean> {
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
      const into = Object.entries(req.object.metadata.labels ?? {})
        .filter(([k, v]) => k.startsWith(AGGREGATE_PREFIX) && v === 'true')
        .map(([k]) => `"${k.slice(AGGREGATE_PREFIX.length)}"`);
      const to = into.length ? ` to the holders of ${into.join(', ')}` : '';
      throw new Forbidden(
        `user "${req.caller.username}" cannot ${req.verb} role "${name}": it would grant ${describeRule(missing)}${to}, which the user does not hold (the verb "escalate" on roles allows it)`,
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

const specOf = (obj: ApiObject | undefined): Record<string, unknown> => (obj && isPlainObject(obj.spec) ? obj.spec : {});

/**
 * Does a user write change who can log in as that user? Creating and deleting do; an update does
 * when it brings a new password (a stored hash sent back unchanged is no change, user-hooks.ts) or
 * flips `spec.disabled`. Status writes never do.
 */
function touchesCredentials(req: AdmissionRequest): boolean {
  if (req.verb === 'create' || req.verb === 'delete' || !req.object || !req.old) return true;
  if (req.subresource) return false;
  const next = specOf(req.object);
  const old = specOf(req.old);
  return (typeof next.password === 'string' && next.password !== old.password) || (next.disabled === true) !== (old.disabled === true);
}

/**
 * `firstAdmin` (SVC_ADMIN_USERNAME) counts as holding super-role whatever the bindings say now:
 * every start binds them to it again (bootstrap/roles-and-first-admin.ts), so removing their binding and then
 * resetting their password must not hand the account over at the next restart.
 */
export function userAdmission(rbac: RbacAuthorizer, firstAdmin?: string): KindHooks['admit'] {
  return async (req) => {
    const name = (req.old ?? req.object)!.metadata.name;
    if (req.caller.via !== 'system' && req.caller.username === name) return; // one's own account
    if (!touchesCredentials(req)) return;
    if (await mayOnRoles(req, 'impersonate', name, 'users')) return;
    const [target, held, always] = await Promise.all([
      rbac.resolve(userCaller(name, 'basic')),
      rbac.resolve(req.caller),
      name === firstAdmin ? rbac.resolveRole(SUPER_ROLE) : undefined,
    ]);
    const missing = uncovered(held.rules, [...target.rules, ...(always?.rules ?? [])]);
    if (missing) {
      throw new Forbidden(
        `user "${req.caller.username}" cannot ${req.verb === 'delete' || req.verb === 'create' ? req.verb : 'change the credentials of'} user "${name}": that user holds ${describeRule(missing)}, which the caller does not (the verb "impersonate" on users allows it)`,
      );
    }
  };
}

/** A role template of a plugin bundle, as the plugin would write it. */
export interface BundleRole {
  object: ApiObject;
  /** Where it comes from, for messages: `extensions/roles.yaml document 2`. */
  where: string;
}

/** What a plugin owns: rules on its own groups, its own UI permissions (plugins/rules.ts). */
export interface PluginScope {
  ruleInside(rule: PolicyRule): boolean;
  uiInside(permission: string): boolean;
}

/**
 * Plugin bundles (docs/API.md §6): `caller` asks to start a plugin whose bundle would write
 * `templates` as the system. Each template's grant is resolved with the bundle written over the
 * stored roles (dependencies, aggregation into it and between templates included). A template
 * that anonymous or authenticated callers would hold needs the caller to hold all it grants; any
 * other needs them to hold what it grants outside `scope`. Throws Forbidden naming the first
 * template and rule the caller lacks.
 */
export async function checkBundleRoles(
  rbac: RbacAuthorizer,
  caller: Caller,
  what: string,
  templates: readonly BundleRole[],
  scope: PluginScope,
): Promise<void> {
  if (templates.length === 0) return;
  const objects = templates.map((t) => t.object);
  const [everyone, held] = await Promise.all([rbac.resolveWith([ANONYMOUS_ROLE, AUTHENTICATED_ROLE], objects), rbac.resolve(caller)]);
  const reachesAll = new Set(everyone.roles);
  const heldUi = new Set(held.uiPermissions);
  for (const { object, where } of templates) {
    const name = object.metadata.name;
    const granted = await rbac.resolveWith([name], objects);
    const toEveryone = reachesAll.has(name);
    const missing = uncovered(held.rules, granted.rules.filter((r) => toEveryone || !scope.ruleInside(r)));
    const ui = heldUi.has('*') ? undefined : granted.uiPermissions.find((p) => !scope.uiInside(p) && !heldUi.has(p));
    if (!missing && ui === undefined) continue;
    const reach = toEveryone
      ? 'every caller would hold it (it aggregates into anonymous or authenticated)'
      : "it reaches beyond the plugin's own groups and UI permissions";
    const lacking = missing ? describeRule(missing) : `the UI permission "${ui}"`;
    throw new Forbidden(`user "${caller.username}" cannot ${what}: role template "${name}" (${where}) grants ${lacking}, which the user does not hold, and ${reach}`);
  }
}
