/**
 * Internal callers (start-up, plugin bundle loader, controllers) act through a named system
 * context instead of a user; grep `systemContext(` to find every operation that is not
 * authorized by RBAC. The other ways past enforcement never serve a client's request: code that
 * reads or writes a model's store directly (authentication/tokens.ts, bootstrap/roles-and-first-admin.ts,
 * plugins/lifecycle.ts) and the `allowAll` authorizer of identity/authorizer.ts (benchmarks).
 */
import type { Caller } from '../identity/caller.js';
import type { Authorizer } from '../identity/authorizer.js';

export interface SystemContext {
  caller: Caller;
  authorizer: Authorizer;
}

export function systemContext(name: string): SystemContext {
  const caller: Caller = Object.freeze({ username: `system:${name}`, authenticated: true, via: 'system' });
  const reason = `system context "${name}"`;
  return { caller, authorizer: { authorize: async () => ({ allowed: true, reason }) } };
}
