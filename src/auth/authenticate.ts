/**
 * Authentication: `Authorization` header → Caller (CONTRACT §2). One function shared by HTTP,
 * WebSocket upgrades and graphql-ws connection params. No credentials → anonymous; wrong
 * credentials → 401, never a silent downgrade.
 *
 * This first version knows the configured administrator (Basic auth). Users stored as objects
 * and personal access tokens plug in here with the identity issue.
 */
import { timingSafeEqual, createHash } from 'node:crypto';
import { Unauthenticated } from '../errors/index.js';
import { ANONYMOUS, type Caller } from '../rbac/authorizer.js';

export type Authenticate = (authorization: string | undefined) => Promise<Caller>;

const digest = (s: string) => createHash('sha256').update(s).digest();
const same = (a: string, b: string) => timingSafeEqual(digest(a), digest(b));

/** Recently accepted header values, so repeated requests skip decoding and hashing. */
const MAX_REMEMBERED = 256;

export function createAuthenticator(admin: { username: string; password: string }): Authenticate {
  const accepted = new Map<string, Caller>();
  const remember = (authorization: string, caller: Caller): Caller => {
    if (accepted.size >= MAX_REMEMBERED) accepted.delete(accepted.keys().next().value!);
    accepted.set(authorization, caller);
    return caller;
  };
  return async (authorization) => {
    if (authorization === undefined || authorization.trim() === '') return ANONYMOUS;
    const known = accepted.get(authorization);
    if (known) return known;
    const [scheme, value = ''] = authorization.trim().split(/\s+/, 2) as [string, string?];
    if (scheme.toLowerCase() === 'basic') {
      let decoded: string;
      try {
        decoded = Buffer.from(value, 'base64').toString('utf8');
      } catch {
        throw new Unauthenticated('malformed Basic credentials');
      }
      const colon = decoded.indexOf(':');
      if (colon < 0) throw new Unauthenticated('malformed Basic credentials');
      const user = decoded.slice(0, colon);
      const password = decoded.slice(colon + 1);
      if (same(user, admin.username) && same(password, admin.password)) {
        return remember(authorization, {
          username: admin.username,
          authenticated: true,
          roles: ['super-role', 'authenticated', 'anonymous'],
        });
      }
      throw new Unauthenticated('invalid username or password');
    }
    if (scheme.toLowerCase() === 'bearer') throw new Unauthenticated('invalid or expired token');
    throw new Unauthenticated(`unsupported authorization scheme "${scheme}"`);
  };
}
