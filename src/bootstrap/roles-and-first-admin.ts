/**
 * Start-up security state, written through the operations layer as `systemContext('bootstrap')`:
 *   - the built-in roles, created when missing (never overwritten: administrators may edit all
 *     but super-role, and those edits survive restarts);
 *   - the first super administrator (docs/API.md §1): a stored user bound to super-role. Its
 *     password is SVC_ADMIN_PASSWORD, or generated on the first start. A later start with
 *     SVC_ADMIN_PASSWORD set resets the stored password to it; without it the stored one is kept.
 *
 * A generated password is never lost (docs/API.md §10): it is kept in an internal record (never
 * served by any API) *before* the user is created, announced as soon as the user exists, and
 * announced again at every later start for as long as it still is the user's password. A start
 * that sees it changed (or SVC_ADMIN_PASSWORD set) deletes the record. A crash between the
 * record and the user, or two gateways starting at once, reuse the recorded password.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { verifyPassword } from '../authentication/password.js';
import { Conflict, NotFound } from '../errors/index.js';
import * as ops from '../operations/index.js';
import type { ModelEntry } from '../operations/types.js';
import { BUILTIN_ROLES, type BuiltinRole } from '../authorization/builtin-roles.js';
import { ANNOTATION_DEPENDENCIES, ANNOTATION_UI_PERMISSIONS, SUPER_ROLE } from '../authorization/resolve.js';
import { systemContext } from '../authorization/system.js';
import { compileModel } from '../registry/compile.js';
import { checkObjectName } from '../registry/metadata.js';
import type { Registry } from '../registry/registry.js';
import type { ApiObject } from '../store/object.js';
import { isStoreError } from '../store/errors.js';
import type { ModelStore, Store } from '../store/types.js';

/** Internal (never served): the generated first-admin password, by user name, until it is changed. */
const GENERATED_PASSWORD_MODEL = compileModel(
  { group: 'security.svc.run', version: 'v1alpha1', kind: 'GeneratedAdminPassword' },
  { platform: true },
);
type Kept = { spec?: { secret?: string } };

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

/** The recorded generated password of `username`, recording `fresh` when there is none yet. */
async function keepGenerated(kept: ModelStore, username: string, fresh: string): Promise<string> {
  const existing = (await kept.get(username)) as Kept | null;
  if (existing?.spec?.secret) return existing.spec.secret;
  try {
    await kept.create({
      apiVersion: GENERATED_PASSWORD_MODEL.apiVersion,
      kind: GENERATED_PASSWORD_MODEL.kind,
      metadata: { name: username, version: 1, creationTimestamp: new Date().toISOString() },
      spec: { secret: fresh },
    });
    return fresh;
  } catch (e) {
    if (!isStoreError(e, 'AlreadyExists')) throw e;
    const raced = (await kept.get(username)) as Kept | null;
    if (raced?.spec?.secret) return raced.spec.secret;
    throw e;
  }
}

async function forgetGenerated(kept: ModelStore, username: string): Promise<void> {
  const existing = await kept.get(username);
  if (!existing) return;
  try {
    await kept.remove(username, existing.metadata.version ?? 0);
  } catch (e) {
    if (!isStoreError(e, 'NotFound') && !isStoreError(e, 'Conflict')) throw e;
  }
}

export interface AdminResult {
  username: string;
  /** The generated password while it is still the administrator's (announced at every start). */
  shownPassword?: string;
  /** True when it was generated at this start. */
  generatedNow: boolean;
}

export interface AdminOptions {
  username: string;
  password?: string;
  /** Where the generated password is kept until it is changed (without: shown at this start only). */
  store?: Store;
  /** Called as soon as a generated password is (still) valid: print it. */
  announce?: (username: string, password: string, generatedNow: boolean) => void;
}

export async function ensureAdmin(registry: Registry, admin: AdminOptions, log?: Logger): Promise<AdminResult> {
  const { username, password } = admin;
  const nameErrors = checkObjectName(username);
  if (nameErrors.length) throw new Error(`SVC_ADMIN_USERNAME "${username}": ${nameErrors[0]!.message}`);
  const users = platform(registry, 'users');
  const ctx = systemContext('bootstrap');
  const kept = admin.store ? await admin.store.model(GENERATED_PASSWORD_MODEL.storage) : undefined;
  let shownPassword: string | undefined;
  let generatedNow = false;
  const stored = await users.store.get(username);
  if (!stored) {
    // Recorded before the user exists, so no failure after this point can lose it.
    const fresh = randomBytes(18).toString('base64url');
    const initial = password ?? (kept ? await keepGenerated(kept, username, fresh) : fresh);
    const created = await ensure(users, {
      apiVersion: 'v1alpha1',
      kind: 'User',
      metadata: { name: username },
      spec: { displayName: 'Administrator', password: initial },
    });
    if (created) log?.info({ user: username }, 'created the first administrator');
    if (password === undefined) {
      const now = (await users.store.get(username))?.spec as { password?: string } | undefined;
      if (await verifyPassword(initial, now?.password)) {
        shownPassword = initial;
        generatedNow = created;
      }
    }
  } else if (password === undefined && kept) {
    const secret = ((await kept.get(username)) as Kept | null)?.spec?.secret;
    if (secret !== undefined) {
      if (await verifyPassword(secret, (stored.spec as { password?: string } | undefined)?.password)) shownPassword = secret;
      else await forgetGenerated(kept, username);
    }
  }
  if (shownPassword !== undefined) admin.announce?.(username, shownPassword, generatedNow);
  if (password !== undefined) {
    if (kept) await forgetGenerated(kept, username);
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
  return { username, shownPassword, generatedNow };
}
