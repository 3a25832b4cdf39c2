/**
 * Who is calling (docs/API.md §2). Identity only: which roles a caller holds is decided by rbac/,
 * never stored on the caller.
 */

/** How the caller proved its identity. `system` callers are gateway internals (rbac/system.ts). */
export type Via = 'anonymous' | 'basic' | 'token' | 'system';

export interface Caller {
  /** The user's name; `anonymous` for visitors without credentials; `system:<name>` for internals. */
  username: string;
  /** True for every caller that presented valid credentials (and for system callers). */
  authenticated: boolean;
  via: Via;
}

export const ANONYMOUS_USERNAME = 'anonymous';

export const ANONYMOUS: Caller = Object.freeze({ username: ANONYMOUS_USERNAME, authenticated: false, via: 'anonymous' }) as Caller;

export const userCaller = (username: string, via: 'basic' | 'token'): Caller => Object.freeze({ username, authenticated: true, via });
