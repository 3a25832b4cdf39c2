/**
 * The User kind's strategy hooks (registry/hooks.ts): `spec.password` is write-only.
 *   - prepare: a new clear-text password is replaced by its scrypt hash before it is stored;
 *     a write without one keeps the stored hash (a PUT of an object read earlier, a status write);
 *   - present: the hash is removed from everything that leaves the gateway (REST, GraphQL,
 *     watch events), since every transport presents objects through the operations layer;
 *   - changed: any user change moves the security generation (credential caches drop).
 * `replaceHash` stores a rehash of the same password at the current cost (authentication/password.ts).
 */
import type { KindHooks } from '../registry/hooks.js';
import { isStoreError } from '../store/errors.js';
import { isPlainObject, type ApiObject } from '../store/object.js';
import type { ModelStore } from '../store/types.js';
import { DEFAULT_COST, hashPassword, type ScryptCost } from './password.js';

const storedHash = (obj: ApiObject | undefined): unknown => (isPlainObject(obj?.spec) ? obj.spec.password : undefined);

export function userHooks(changed: (user: ApiObject) => Promise<void>, cost: ScryptCost = DEFAULT_COST): KindHooks {
  return {
    async prepare(next, old) {
      if (next.spec !== undefined && !isPlainObject(next.spec)) return next;
      const spec: Record<string, unknown> = { ...(next.spec ?? {}) };
      const given = spec.password;
      const kept = storedHash(old);
      // The stored hash itself comes back unchanged only from server-side writes (status, delete).
      if (typeof given === 'string' && given !== kept) spec.password = await hashPassword(given, cost);
      else if (typeof kept === 'string') spec.password = kept;
      else delete spec.password;
      return { ...next, spec };
    },
    present(obj) {
      if (!isPlainObject(obj.spec) || !('password' in obj.spec)) return obj;
      const { password: _writeOnly, ...spec } = obj.spec;
      return { ...obj, spec };
    },
    changed,
  };
}

/**
 * Replaces user `name`'s password hash `from` by `to`, a rehash of the same password (same salt,
 * so sessions hold: authentication/authenticate.ts). Written straight to the store, as the password did
 * not change: no hook runs and the security generation stays. Skipped when the user changed
 * meanwhile; the next login tries again.
 */
export async function replaceHash(users: ModelStore, name: string, from: string, to: string): Promise<void> {
  const user = await users.get(name);
  if (!user || !isPlainObject(user.spec) || user.spec.password !== from) return;
  const version = user.metadata.version ?? 0;
  try {
    await users.update({ ...user, metadata: { ...user.metadata, version: version + 1 }, spec: { ...user.spec, password: to } }, version);
  } catch (e) {
    if (!isStoreError(e, 'Conflict') && !isStoreError(e, 'NotFound')) throw e;
  }
}
