/**
 * Who is calling (docs/API.md §2). Identity only: which roles a caller holds is decided by authorization/,
 * never stored on the caller.
 */

/** How the caller proved its identity. `system` callers are gateway internals (authorization/system.ts). */
export type Via = 'anonymous' | 'basic' | 'token' | 'system';

/**
 * The credentials a logged-in user presented (authentication/authenticate.ts), for what outlives one
 * request: watch streams and WebSocket sessions check them again (docs/API.md §2).
 */
export interface Session {
  /**
   * Resolves while the credentials hold; rejects with Unauthenticated once the token is revoked
   * or expired, or the user is disabled, deleted or given a new password. Cheap while nothing
   * about users and tokens changed (the security generation).
   */
  check(): Promise<void>;
  /** True when `check` would resolve at once without reading anything (the request path's case). */
  fresh(): boolean;
  /** The user object's creationTimestamp: what a token minted now belongs to (not the name). */
  readonly userCreated: string | undefined;
  /** When the credentials stop being valid (a token's expiry, ms since epoch); none for a password. */
  readonly expiresAt?: number;
}

export interface Caller {
  /** The user's name; `anonymous` for visitors without credentials; `system:<name>` for internals. */
  username: string;
  /** True for every caller that presented valid credentials (and for system callers). */
  authenticated: boolean;
  via: Via;
  /** The credentials of a logged-in user (none for anonymous and system callers). */
  session?: Session;
}

export const ANONYMOUS_USERNAME = 'anonymous';

export const ANONYMOUS: Caller = Object.freeze({ username: ANONYMOUS_USERNAME, authenticated: false, via: 'anonymous' }) as Caller;

export const userCaller = (username: string, via: 'basic' | 'token', session?: Session): Caller =>
  Object.freeze(session ? { username, authenticated: true, via, session } : { username, authenticated: true, via });
