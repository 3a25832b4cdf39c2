/**
 * The User kind's strategy hooks (registry/hooks.ts): `spec.password` is write-only.
 *   - prepare: a new clear-text password is replaced by its scrypt hash before it is stored;
 *     a write without one keeps the stored hash (a PUT of an object read earlier, a status write);
 *   - present: the hash is removed from everything that leaves the gateway (REST, GraphQL,
 *     watch events), since every transport presents objects through the operations layer;
 *   - changed: any user change moves the security generation (credential caches drop).
 */
import type { KindHooks } from '../registry/hooks.js';
import { isPlainObject, type ApiObject } from '../store/object.js';
import { hashPassword } from './password.js';

const storedHash = (obj: ApiObject | undefined): unknown => (isPlainObject(obj?.spec) ? obj.spec.password : undefined);

export function userHooks(changed: () => Promise<void>): KindHooks {
  return {
    async prepare(next, old) {
      if (next.spec !== undefined && !isPlainObject(next.spec)) return next;
      const spec: Record<string, unknown> = { ...(next.spec ?? {}) };
      const given = spec.password;
      const kept = storedHash(old);
      // The stored hash itself comes back unchanged only from server-side writes (status, delete).
      if (typeof given === 'string' && given !== kept) spec.password = await hashPassword(given);
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
