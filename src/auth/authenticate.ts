/**
 * Authentication: `Authorization` header → Caller (docs/API.md §2). One function shared by the
 * HTTP pipeline, WebSocket upgrades, GraphQL and graphql-ws connection params.
 *   - no credentials → anonymous;
 *   - `Basic` → a stored user (users/{name}, spec.password checked against its scrypt hash);
 *   - `Bearer` → a personal access token (auth/tokens.ts);
 *   - anything wrong → 401 (never a silent downgrade); over the failed-login limits → 429.
 *
 * Verified headers are remembered, keyed by a SHA-256 digest of the header (never the clear
 * text), so a request pays for the slow hash once. The memory is dropped whenever the security
 * generation moves (any user or token change, here or on another gateway).
 */
import { createHash } from 'node:crypto';
import { Unauthenticated } from '../errors/index.js';
import type { ApiObject } from '../store/object.js';
import type { SecurityGeneration } from './generation.js';
import { ANONYMOUS, userCaller, type Caller } from '../security/identity.js';
import type { LoginLimiter } from './login-limiter.js';
import { verifyPassword } from './password.js';
import type { TokenStore } from './tokens.js';

/** Where a request comes from: the socket's peer address (forwarding headers are not trusted). */
export interface ClientInfo {
  address?: string;
}

export type Authenticate = (authorization: string | undefined, client?: ClientInfo) => Promise<Caller>;

export interface AuthenticatorDeps {
  /** Raw (unpresented) user objects by name. */
  users: { get(name: string): Promise<ApiObject | null> };
  tokens: Pick<TokenStore, 'verify'>;
  generation: Pick<SecurityGeneration, 'value'>;
  limiter: LoginLimiter;
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

const headerDigest = (h: string) => createHash('sha256').update(h).digest('base64');

/** True for a stored user that is neither disabled nor being deleted. */
const active = (user: ApiObject | null): user is ApiObject =>
  !!user && !user.metadata.deletionTimestamp && (user.spec as { disabled?: unknown } | undefined)?.disabled !== true;

/** The stored hash of an active user, or undefined (unknown, disabled, being deleted, no password). */
function activeHash(user: ApiObject | null): string | undefined {
  const password = active(user) ? (user.spec as { password?: unknown } | undefined)?.password : undefined;
  return typeof password === 'string' ? password : undefined;
}

export function createAuthenticator(deps: AuthenticatorDeps): Authenticate {
  const remembered = new Map<string, Remembered>();
  const inFlight = new Map<string, { generation: number; verified: Promise<Caller>; login: string }>();
  let filledAt = deps.generation.value;

  const recall = (key: string): Remembered | undefined => {
    if (deps.generation.value !== filledAt) {
      remembered.clear();
      filledAt = deps.generation.value;
      return undefined;
    }
    const r = remembered.get(key);
    if (!r) return undefined;
    if (r.expiresAt !== undefined && r.expiresAt <= Date.now()) {
      remembered.delete(key);
      return undefined;
    }
    return r;
  };
  const remember = (key: string, generation: number, entry: Remembered): Caller => {
    if (generation === deps.generation.value && generation === filledAt) {
      if (remembered.size >= MAX_REMEMBERED) remembered.delete(remembered.keys().next().value!);
      remembered.set(key, entry);
    }
    return entry.caller;
  };

  async function basic(value: string, client: ClientInfo, key: string, generation: number): Promise<Caller> {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon <= 0) throw new Unauthenticated('malformed Basic credentials');
    const username = decoded.slice(0, colon);
    const password = decoded.slice(colon + 1);
    const address = client.address ?? '';
    const user = USERNAME.test(username) && username.length <= 253 ? await deps.users.get(username) : null;
    if (await verifyPassword(password, activeHash(user))) {
      return remember(key, generation, { caller: userCaller(username, 'basic'), login: username });
    }
    deps.limiter.fail(username, address);
    throw new Unauthenticated('invalid username or password');
  }

  async function bearer(token: string, client: ClientInfo, key: string, generation: number): Promise<Caller> {
    const address = client.address ?? '';
    // Token guesses count against the client address (and a pseudo-user no login name can take).
    const owner = await deps.tokens.verify(token);
    if (owner && active(await deps.users.get(owner.username))) {
      return remember(key, generation, { caller: userCaller(owner.username, 'token'), login: TOKEN_LOGIN, expiresAt: owner.expiresAt });
    }
    deps.limiter.fail(TOKEN_LOGIN, address);
    throw new Unauthenticated('invalid, revoked or expired token');
  }

  return async (authorization, client = {}) => {
    if (authorization === undefined || authorization.trim() === '') return ANONYMOUS;
    const key = headerDigest(authorization);
    const known = recall(key);
    if (known) {
      // Every request with credentials is a login attempt: over the limits it is refused even
      // with credentials verified earlier (docs/API.md §2), at the cost of two map lookups.
      deps.limiter.check(known.login, client.address ?? '');
      return known.caller;
    }
    const generation = deps.generation.value;
    // Requests carrying the same header while it is being verified share that verification
    // (a burst of identical requests on a cold cache pays for one slow hash, not one each).
    // Each joining request is still a login attempt checked against the limits of its address.
    const running = inFlight.get(key);
    if (running && running.generation === generation) {
      deps.limiter.check(running.login, client.address ?? '');
      return running.verified;
    }
    const [scheme = '', value = ''] = authorization.trim().split(/\s+/, 2);
    const kind = scheme.toLowerCase();
    if (kind !== 'basic' && kind !== 'bearer') throw new Unauthenticated(`unsupported authorization scheme "${scheme.slice(0, 20)}"`);
    const login = kind === 'basic' ? basicUsername(value) : TOKEN_LOGIN;
    deps.limiter.check(login, client.address ?? '');
    const verified = kind === 'basic' ? basic(value, client, key, generation) : bearer(value, client, key, generation);
    const entry = { generation, verified, login };
    inFlight.set(key, entry);
    const forget = () => {
      if (inFlight.get(key) === entry) inFlight.delete(key);
    };
    verified.then(forget, forget);
    return verified;
  };
}
