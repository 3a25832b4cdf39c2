/**
 * Internal callers (start-up, plugin bundle loader, controllers) act through a named system
 * context instead of a user; grep `systemContext(` to find every operation that is not
 * authorized by RBAC. The other ways past enforcement never serve a client's request: code that
 * reads or writes a model's store directly (auth/tokens.ts, bootstrap/security.ts,
 * plugins/lifecycle.ts) and the `allowAll` authorizer of security/authorizer.ts (benchmarks).
 */
import type { Caller } from '../security/identity.js';
import type { Authorizer } from '../security/authorizer.js';

export interface SystemContext {
  caller: Caller;
  authorizer: Authorizer;
}

export function systemContext(name: string): SystemContext {
  const caller: Caller = Object.freeze({ username: `system:${name}`, authenticated: true, via: 'system' });
  const reason = `system context "${name}"`;
  return { caller, authorizer: { authorize: async () => ({ allowed: true, reason }) } };
}
