/**
 * Internal callers (start-up, plugin bundle loader, controllers) act through a named system
 * context instead of a user. This is the ONLY opt-out from enforcement: grep `systemContext(`
 * to find every caller that is not authorized by RBAC.
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
