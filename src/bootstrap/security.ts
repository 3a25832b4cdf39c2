/**
 * Start-up security state, written through the operations layer as `systemContext('bootstrap')`:
 *   - the built-in roles, created when missing (never overwritten: administrators may edit all
 *     but super-role, and those edits survive restarts);
 *   - the first super administrator (CONTRACT §1): a stored user bound to super-role. Its
 *     password is SVC_ADMIN_PASSWORD, or generated on the first start (returned so the CLI
 *     prints it once; only its hash is stored). A later start with SVC_ADMIN_PASSWORD set
 *     resets the stored password to it; without it the stored one is kept.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { verifyPassword } from '../auth/password.js';
import { Conflict, NotFound } from '../errors/index.js';
import * as ops from '../operations/index.js';
import type { ModelEntry } from '../operations/types.js';
import { BUILTIN_ROLES, type BuiltinRole } from '../rbac/builtin-roles.js';
import { ANNOTATION_DEPENDENCIES, ANNOTATION_UI_PERMISSIONS, SUPER_ROLE } from '../rbac/resolve.js';
import { systemContext } from '../rbac/system.js';
import { checkObjectName } from '../registry/metadata.js';
import type { Registry } from '../registry/registry.js';
import type { ApiObject } from '../store/object.js';

const platform = (registry: Registry, plural: string): ModelEntry => {
  const entry = registry.find('', 'v1alpha1', plural);
  if (!entry) throw new Error(`platform kind ${plural} is not registered`);
  return entry;
};

/** Creates `body` unless an object of that name exists (another gateway may race us: fine). */
async function ensure(entry: ModelEntry, body: { metadata: { name: string } } & Record<string, unknown>): Promise<boolean> {
  if (await entry.store.get(body.metadata.name)) return false;
  try {
    await ops.createObject(systemContext('bootstrap'), entry, body);
    return true;
  } catch (e) {
    if (e instanceof Conflict) return false;
    throw e;
  }
}

/**
 * A built-in role stored by an earlier version is brought up to date on start, as Kubernetes
 * reconciles its bootstrap roles: rules the built-in definition has and the stored role lacks are
 * added (rules someone added are kept), the built-in labels and annotations are set, and the
 * JSON-array annotations (UI permissions, dependencies) become the union of both. An operator opts
 * a role out with the annotation `rbac.authorization.svc.run/autoupdate: "false"`.
 */
export const ANNOTATION_AUTOUPDATE = 'rbac.authorization.svc.run/autoupdate';
const UNION_ANNOTATIONS = new Set([ANNOTATION_UI_PERMISSIONS, ANNOTATION_DEPENDENCIES]);

function parseList(text: string | undefined): string[] {
  try {
    const v: unknown = text === undefined ? [] : JSON.parse(text);
    return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
  } catch {
    return [];
  }
}

/** The stored role with what the built-in definition adds, or undefined when nothing is missing. */
export function reconcileRole(stored: ApiObject, builtin: BuiltinRole): ApiObject | undefined {
  const meta = stored.metadata;
  if (meta.annotations?.[ANNOTATION_AUTOUPDATE] === 'false') return undefined;
  const storedRules = ((stored as { rules?: unknown[] }).rules ?? []) as unknown[];
  const rules = [...storedRules];
  const have = new Set(rules.map((r) => JSON.stringify(r)));
  for (const rule of builtin.rules) if (!have.has(JSON.stringify(rule))) rules.push(structuredClone(rule));
  const labels = { ...meta.labels, ...builtin.metadata.labels };
  const annotations: Record<string, string> = { ...meta.annotations };
  for (const [key, value] of Object.entries(builtin.metadata.annotations)) {
    if (!UNION_ANNOTATIONS.has(key)) annotations[key] = value;
    else annotations[key] = JSON.stringify([...new Set([...parseList(annotations[key]), ...parseList(value)])]);
  }
  const next = { ...stored, metadata: { ...meta, labels, annotations }, rules } as ApiObject;
  const same =
    rules.length === storedRules.length &&
    JSON.stringify(labels) === JSON.stringify({ ...meta.labels }) &&
    JSON.stringify(annotations) === JSON.stringify({ ...meta.annotations });
  return same ? undefined : next;
}

export async function ensureBuiltinRoles(registry: Registry): Promise<void> {
  const roles = platform(registry, 'roles');
  for (const role of BUILTIN_ROLES) {
    if (await ensure(roles, { apiVersion: 'v1alpha1', kind: 'Role', ...structuredClone(role) })) continue;
    const stored = await roles.store.get(role.metadata.name);
    const next = stored && reconcileRole(stored, role);
    if (!next) continue;
    try {
      await ops.updateObject(systemContext('bootstrap'), roles, role.metadata.name, next);
    } catch (e) {
      // Another gateway reconciled it first (or it was deleted meanwhile): its next start retries.
      if (!(e instanceof Conflict) && !(e instanceof NotFound)) throw e;
    }
  }
}

export interface AdminResult {
  username: string;
  /** Set only when it was generated at this start (print it once). */
  generatedPassword?: string;
}

export async function ensureAdmin(registry: Registry, admin: { username: string; password?: string }, log?: Logger): Promise<AdminResult> {
  const { username, password } = admin;
  const nameErrors = checkObjectName(username);
  if (nameErrors.length) throw new Error(`SVC_ADMIN_USERNAME "${username}": ${nameErrors[0]!.message}`);
  const users = platform(registry, 'users');
  const ctx = systemContext('bootstrap');
  let generatedPassword: string | undefined;
  const stored = await users.store.get(username);
  if (!stored) {
    const initial = password ?? randomBytes(18).toString('base64url');
    const created = await ensure(users, {
      apiVersion: 'v1alpha1',
      kind: 'User',
      metadata: { name: username },
      spec: { displayName: 'Administrator', password: initial },
    });
    if (created && password === undefined) generatedPassword = initial;
    if (created) log?.info({ user: username }, 'created the first administrator');
  }
  if (password !== undefined) {
    const current = await users.store.get(username);
    const hash = (current?.spec as { password?: string } | undefined)?.password;
    if (current && !(await verifyPassword(password, hash))) {
      await ops.patchObject(ctx, users, username, { spec: { password } }, 'merge');
      log?.info({ user: username }, 'administrator password reset from SVC_ADMIN_PASSWORD');
    }
  }
  await ensure(platform(registry, 'rolebindings'), {
    apiVersion: 'v1alpha1',
    kind: 'RoleBinding',
    metadata: { name: `${username}-${SUPER_ROLE}`.slice(0, 253) },
    roleRef: { apiGroup: '', kind: 'Role', name: SUPER_ROLE },
    subjects: [{ apiGroup: '', kind: 'User', name: username }],
  });
  return { username, generatedPassword };
}
