/**
 * Authentication: `Authorization` header → Caller (docs/API.md §2). One function shared by the
 * HTTP pipeline, WebSocket upgrades, GraphQL and graphql-ws connection params.
 *   - no credentials → anonymous;
 *   - `Basic` → a stored user (users/{name}, spec.password checked against its scrypt hash);
 *   - `Bearer` → a personal access token (authentication/tokens.ts);
 *   - anything wrong → 401 (never a silent downgrade); over the failed-login limits → 429.
 *
 * Verified headers are remembered, keyed by a SHA-256 digest of the header (never the clear
 * text), so a request pays for the slow hash once. Whenever the security generation moves (any
 * user or token change, here or on another gateway), a remembered header is used again only
 * after its session (below) read that its user and token still hold: a store read, no hash.
 *
 * Each logged-in caller carries a Session (identity/caller.ts) that streams and WebSocket
 * sessions check again: it fails once the token is revoked or expired, or the user is disabled,
 * deleted, recreated under the same name or given a new password (docs/API.md §2). A token
 * belongs to the user object it was minted for, not to the name.
 */
import { hash } from 'node:crypto';
import { Unauthenticated } from '../errors/index.js';
import type { ApiObject } from '../store/object.js';
import type { SecurityGeneration } from './generation.js';
import { ANONYMOUS, userCaller, type Caller, type Session } from '../identity/caller.js';
import type { LoginLimiter } from './login-limiter.js';
import { needsRehash, passwordStamp, rehashPassword, verifyPassword, type ScryptCost } from './password.js';
import type { TokenOwner, TokenStore } from './tokens.js';

/** Where a request comes from: the socket's peer address (forwarding headers are not trusted). */
export interface ClientInfo {
  address?: string;
}

export type Authenticate = (authorization: string | undefined, client?: ClientInfo) => Promise<Caller>;

export interface AuthenticatorDeps {
  users: {
    /** Raw (unpresented) user objects by name. */
    get(name: string): Promise<ApiObject | null>;
    /** Replaces a user's password hash `from` by `to` (a rehash at the current cost); optional. */
    replaceHash?(name: string, from: string, to: string): Promise<void>;
  };
  tokens: Pick<TokenStore, 'verify' | 'lookup'>;
  generation: Pick<SecurityGeneration, 'value'>;
  limiter: LoginLimiter;
  /** The scrypt cost of new hashes (the default; tests lower it: GatewayOptions.passwordCost). */
  passwordCost?: ScryptCost;
}

const MAX_REMEMBERED = 10_000;
const USERNAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

interface Remembered {
  caller: Caller;
  /** The name the failed-login limits count this credential under. */
  login: string;
  /** Token expiry (ms since epoch): the entry is void from then on. */
  expiresAt?: number;
}

/** Token guesses count against the client address under a name no username can take. */
const TOKEN_LOGIN = ':token';

/** The username of Basic credentials (what the failed-login limits count them under). */
function basicUsername(value: string): string {
  const decoded = Buffer.from(value, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon > 0 ? decoded.slice(0, colon) : '';
}

/** One-shot `crypto.hash`: for a text this short about half the time of a Hash object. */
const headerDigest = (h: string) => hash('sha256', h, 'base64');

/** True for a stored user that is neither disabled nor being deleted. */
const active = (user: ApiObject | null): user is ApiObject =>
  !!user && !user.metadata.deletionTimestamp && (user.spec as { disabled?: unknown } | undefined)?.disabled !== true;

/** The stored hash of an active user, or undefined (unknown, disabled, being deleted, no password). */
function activeHash(user: ApiObject | null): string | undefined {
  const password = active(user) ? (user.spec as { password?: unknown } | undefined)?.password : undefined;
  return typeof password === 'string' ? password : undefined;
}

/**
 * True when the token belongs to this user object, not merely to its name (docs/API.md §2): the
 * object the token was minted for (its creationTimestamp, recorded in the token), or, for a
 * token minted before that was recorded, an object older than the token.
 */
function ownedBy(owner: TokenOwner, user: ApiObject): boolean {
  const created = user.metadata.creationTimestamp;
  if (owner.userCreated !== undefined) return created === owner.userCreated;
  return created !== undefined && owner.created !== undefined && created <= owner.created;
}

export function createAuthenticator(deps: AuthenticatorDeps): Authenticate {
  const remembered = new Map<string, Remembered>();
  const inFlight = new Map<string, { generation: number; verified: Promise<Caller>; login: string }>();

  const recall = (key: string): Remembered | undefined => {
    const r = remembered.get(key);
    if (r?.expiresAt !== undefined && r.expiresAt <= Date.now()) {
      remembered.delete(key);
      return undefined;
    }
    return r;
  };
  const remember = (key: string, entry: Remembered): Caller => {
    if (remembered.size >= MAX_REMEMBERED) remembered.delete(remembered.keys().next().value!);
    remembered.set(key, entry);
    return entry.caller;
  };

  /**
   * The session of verified credentials: `holds` reads again whether they are still valid. It
   * runs only when the security generation moved since the last check (every change of a user
   * or a token moves it, on every gateway sharing the database), once for all who ask at a time.
   */
  const session = (generation: number, holds: () => Promise<boolean>, userCreated: string | undefined, expiresAt?: number): Session => {
    let checkedAt = generation;
    let running: Promise<void> | undefined;
    return {
      userCreated,
      expiresAt,
      fresh: () => (expiresAt === undefined || expiresAt > Date.now()) && deps.generation.value === checkedAt,
      check() {
        if (expiresAt !== undefined && expiresAt <= Date.now()) return Promise.reject(new Unauthenticated('the token has expired'));
        if (deps.generation.value === checkedAt) return Promise.resolve();
        running ??= (async () => {
          const at = deps.generation.value;
          try {
            if (!(await holds())) throw new Unauthenticated('the credentials of this session were revoked');
            checkedAt = at;
          } finally {
            running = undefined;
          }
        })();
        return running;
      },
    };
  };

  /** Verifies Basic credentials; Unauthenticated when they are wrong. */
  async function basic(value: string, key: string, generation: number): Promise<Caller> {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon <= 0) throw new Unauthenticated('malformed Basic credentials');
    const username = decoded.slice(0, colon);
    const password = decoded.slice(colon + 1);
    const user = USERNAME.test(username) && username.length <= 253 ? await deps.users.get(username) : null;
    const hash = activeHash(user);
    if (!(await verifyPassword(password, hash, deps.passwordCost))) throw new Unauthenticated('invalid username or password');
    if (needsRehash(hash!, deps.passwordCost) && deps.users.replaceHash) {
      // At the current cost, in the background: this login does not wait for a second hash.
      void rehashPassword(password, hash!, deps.passwordCost)
        .then((next) => (next ? deps.users.replaceHash!(username, hash!, next) : undefined))
        .catch(() => undefined);
    }
    const created = user!.metadata.creationTimestamp;
    const stamp = passwordStamp(hash!);
    const holds = async () => {
      const now = await deps.users.get(username);
      const current = activeHash(now);
      return current !== undefined && now!.metadata.creationTimestamp === created && passwordStamp(current) === stamp;
    };
    return remember(key, { caller: userCaller(username, 'basic', session(generation, holds, created)), login: username });
  }

  async function bearer(token: string, client: ClientInfo, key: string, generation: number): Promise<Caller> {
    const address = client.address ?? '';
    // Token guesses count against the client address (and a pseudo-user no login name can take).
    const owner = await deps.tokens.verify(token);
    const user = owner ? await deps.users.get(owner.username) : null;
    if (owner && active(user) && ownedBy(owner, user)) {
      const holds = async () => {
        const still = await deps.tokens.lookup(owner.name);
        const now = still ? await deps.users.get(still.username) : null;
        return !!still && active(now) && ownedBy(still, now);
      };
      const caller = userCaller(owner.username, 'token', session(generation, holds, user.metadata.creationTimestamp, owner.expiresAt));
      return remember(key, { caller, login: TOKEN_LOGIN, expiresAt: owner.expiresAt });
    }
    deps.limiter.fail(TOKEN_LOGIN, address);
    throw new Unauthenticated('invalid, revoked or expired token');
  }

  return async (authorization, client = {}) => {
    if (authorization === undefined || authorization.trim() === '') return ANONYMOUS;
    const key = headerDigest(authorization);
    const address = client.address ?? '';
    const known = recall(key);
    if (known) {
      // Every request with credentials is a login attempt: over the limits it is refused even
      // with credentials verified earlier (docs/API.md §2), at the cost of two map lookups.
      deps.limiter.check(known.login, address);
      // After a change of users or tokens (the security generation moved) the session tells,
      // without the slow hash, whether these credentials still hold; else they are verified afresh.
      const session = known.caller.session!;
      if (session.fresh()) return known.caller;
      try {
        await session.check();
        return known.caller;
      } catch (e) {
        if (!(e instanceof Unauthenticated)) throw e;
        if (remembered.get(key) === known) remembered.delete(key);
      }
    }
    const generation = deps.generation.value;
    // Requests carrying the same header while it is being verified share that verification
    // (a burst of identical requests on a cold cache pays for one slow hash, not one each).
    // Each joining request is still a login attempt checked against the limits of its address.
    const running = inFlight.get(key);
    if (running && running.generation === generation) {
      deps.limiter.check(running.login, address);
      return running.verified;
    }
    const [scheme = '', value = ''] = authorization.trim().split(/\s+/, 2);
    const kind = scheme.toLowerCase();
    if (kind !== 'basic' && kind !== 'bearer') throw new Unauthenticated(`unsupported authorization scheme "${scheme.slice(0, 20)}"`);
    let verified: Promise<Caller>;
    let login: string;
    if (kind === 'basic') {
      // A password check counts as a failure while it runs (docs/API.md §2: concurrent guesses).
      login = basicUsername(value);
      const done = deps.limiter.attempt(login, address);
      verified = basic(value, key, generation);
      verified.then(
        () => done(false),
        (e: unknown) => done(e instanceof Unauthenticated),
      );
    } else {
      login = TOKEN_LOGIN;
      deps.limiter.check(login, address);
      verified = bearer(value, client, key, generation);
    }
    const entry = { generation, verified, login };
    inFlight.set(key, entry);
    const forget = () => {
      if (inFlight.get(key) === entry) inFlight.delete(key);
    };
    verified.then(forget, forget);
    return verified;
  };
}
