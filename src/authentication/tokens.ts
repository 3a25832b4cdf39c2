/**
 * Personal access tokens (docs/API.md §2). A token belongs to the user who created it; its text
 * `svcpat_<name>_<secret>` is returned once, on creation. Only a SHA-256 digest of the 256-bit
 * random secret is stored (a slow hash adds nothing for a secret of that entropy), compared in
 * constant time. Expired and revoked (deleted) tokens authenticate nobody.
 *
 * A token belongs to the user object it was minted for, not to its name: it records the
 * object's creationTimestamp (`ownerCreated`, never shown), and authentication checks it, so a
 * new user of the same name never inherits it; deleting a user removes its tokens
 * (`revokeAllOf`). A token minted with a token expires no later than the minting token.
 *
 * Tokens live in their own storage (`security.svc.run/v1alpha1/personalaccesstokens`), not in
 * the registry, so no generated route or GraphQL field can ever show a digest; the endpoints
 * are in pipeline/platform-routes.ts.
 */
import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { Invalid, NotFound } from '../errors/index.js';
import { envelope, type ListResult } from '../query/envelope.js';
import { compileModel } from '../registry/compile.js';
import { isPlainObject, type ApiObject } from '../store/object.js';
import { isStoreError } from '../store/errors.js';
import type { ModelStore, Store, StoreQuery } from '../store/types.js';

export const TOKEN_GROUP = 'uc.api.security.svc.run';
export const TOKEN_VERSION = 'v1alpha1';
export const TOKEN_RESOURCE = 'personalaccesstokens';
const API_VERSION = `${TOKEN_GROUP}/${TOKEN_VERSION}`;
const KIND = 'PersonalAccessToken';
const TOKEN = /^svcpat_([a-z0-9]+)_([A-Za-z0-9_-]{43})$/;

const TOKEN_MODEL = compileModel(
  {
    group: 'security.svc.run',
    version: 'v1alpha1',
    kind: KIND,
    indexes: [{ name: 'spec.username', path: 'spec.username' }],
  },
  { platform: true, extraTopLevel: ['secretDigest', 'ownerCreated'] },
);

const digest = (secret: string) => hash('sha256', secret, 'hex');

/** What leaves the gateway: never the digest (nor the owner's recorded identity). */
function present(obj: ApiObject): ApiObject {
  const { secretDigest: _hidden, ownerCreated: _internal, ...shown } = obj;
  return shown as ApiObject;
}

export interface TokenOwner {
  /** The token object's name. */
  name: string;
  username: string;
  /** The creationTimestamp of the user object the token was minted for (absent on older tokens). */
  userCreated?: string;
  /** The token's own creationTimestamp. */
  created?: string;
  /** The token's expiry (ms since epoch), if any. */
  expiresAt?: number;
}

/** Who mints a token: the user object, and the expiry of the token it authenticated with. */
export interface Minter {
  username: string;
  /** The user object's creationTimestamp. */
  userCreated?: string;
  /** The minting token's expiry (ms since epoch): the new token's expiry is capped at it. */
  notAfter?: number;
}

/** The owner of a stored token, or undefined when it is malformed or expired. */
function ownerOf(obj: ApiObject, now: number): TokenOwner | undefined {
  const spec = obj.spec as { username?: string; expiresAt?: string };
  if (typeof spec.username !== 'string') return undefined;
  const expiresAt = spec.expiresAt ? Date.parse(spec.expiresAt) : undefined;
  if (expiresAt !== undefined && expiresAt <= now) return undefined;
  const userCreated = typeof obj.ownerCreated === 'string' ? obj.ownerCreated : undefined;
  return { name: obj.metadata.name, username: spec.username, userCreated, created: obj.metadata.creationTimestamp, expiresAt };
}

export class TokenStore {
  private constructor(private readonly store: ModelStore, private readonly changed: () => Promise<void>) {}

  static async open(store: Store, changed: () => Promise<void>): Promise<TokenStore> {
    return new TokenStore(await store.model(TOKEN_MODEL.storage), changed);
  }

  /** Creates a token for the minting user; returns the object and, this once, its text. */
  async create(minter: Minter, body: unknown, now = Date.now()): Promise<{ object: ApiObject; token: string }> {
    const { username, userCreated, notAfter } = minter;
    const spec = isPlainObject(body) && isPlainObject(body.spec) ? body.spec : undefined;
    if (!spec) throw new Invalid('spec is required', [{ field: 'spec', message: 'is required' }]);
    const errors: { field: string; message: string }[] = [];
    const displayName = spec.displayName;
    if (typeof displayName !== 'string' || displayName.trim() === '' || displayName.length > 256) {
      errors.push({ field: 'spec.displayName', message: 'must be a non-empty string of at most 256 characters' });
    }
    let expiresAt: string | undefined;
    if (spec.expiresAt !== undefined && spec.expiresAt !== null) {
      const t = typeof spec.expiresAt === 'string' ? Date.parse(spec.expiresAt) : NaN;
      if (!Number.isFinite(t)) errors.push({ field: 'spec.expiresAt', message: 'must be an RFC 3339 date-time' });
      else if (t <= now) errors.push({ field: 'spec.expiresAt', message: 'must be in the future' });
      else expiresAt = new Date(t).toISOString();
    }
    if (errors.length) throw new Invalid(errors.map((e) => `${e.field}: ${e.message}`).join('; '), errors);
    // Minted with a token: no later than that token (without an expiry of its own: at its expiry).
    if (notAfter !== undefined && (expiresAt === undefined || Date.parse(expiresAt) > notAfter)) expiresAt = new Date(notAfter).toISOString();
    for (let attempt = 0; ; attempt++) {
      const name = `pat${randomBytes(8).toString('hex')}`;
      const secret = randomBytes(32).toString('base64url');
      const obj: ApiObject = {
        apiVersion: API_VERSION,
        kind: KIND,
        metadata: { name, creationTimestamp: new Date(now).toISOString(), version: 1 },
        spec: { displayName, username, ...(expiresAt ? { expiresAt } : {}) },
        secretDigest: digest(secret),
        ...(userCreated ? { ownerCreated: userCreated } : {}),
      };
      try {
        const created = await this.store.create(obj);
        await this.changed();
        return { object: present(created), token: `svcpat_${name}_${secret}` };
      } catch (e) {
        if (isStoreError(e, 'AlreadyExists') && attempt < 5) continue;
        throw e;
      }
    }
  }

  /** The caller's own tokens, newest first, without digests. */
  async list(username: string): Promise<ListResult> {
    const query: StoreQuery = {
      where: [{ index: 'spec.username', op: 'in', values: [username] }],
      sort: [
        { index: 'metadata.creationTimestamp', direction: 'desc' },
        { index: 'metadata.name', direction: 'asc' },
      ],
      offset: 0,
    };
    const rv = await this.store.resourceVersion();
    const { items, total } = await this.store.list(query);
    return envelope(query, items.map(present), total, rv);
  }

  /** One of the caller's tokens; another user's token is "not found". */
  async get(username: string, name: string): Promise<ApiObject> {
    const obj = await this.store.get(name);
    if (!obj || (obj.spec as { username?: string } | undefined)?.username !== username) {
      throw new NotFound(`${KIND} "${name}" not found`);
    }
    return present(obj);
  }

  /** Revokes (deletes) one of the caller's tokens; it authenticates nobody from now on. */
  async revoke(username: string, name: string): Promise<ApiObject> {
    for (;;) {
      const obj = await this.store.get(name);
      if (!obj || (obj.spec as { username?: string } | undefined)?.username !== username) {
        throw new NotFound(`${KIND} "${name}" not found`);
      }
      try {
        await this.store.remove(name, obj.metadata.version ?? 0);
      } catch (e) {
        if (isStoreError(e, 'Conflict')) continue;
        if (isStoreError(e, 'NotFound')) throw new NotFound(`${KIND} "${name}" not found`);
        throw e;
      }
      await this.changed();
      return present(obj);
    }
  }

  /** Revokes every token of `username` (the user is being deleted). */
  async revokeAllOf(username: string): Promise<void> {
    const query: StoreQuery = {
      where: [{ index: 'spec.username', op: 'in', values: [username] }],
      sort: [{ index: 'metadata.name', direction: 'asc' }],
      offset: 0,
    };
    const { items } = await this.store.list(query);
    for (const obj of items) {
      try {
        await this.store.remove(obj.metadata.name, obj.metadata.version ?? 0);
      } catch (e) {
        if (!isStoreError(e, 'NotFound') && !isStoreError(e, 'Conflict')) throw e;
      }
    }
    if (items.length) await this.changed();
  }

  /** The owner of a token text, or undefined when it is malformed, unknown, revoked or expired. */
  async verify(token: string, now = Date.now()): Promise<TokenOwner | undefined> {
    const m = TOKEN.exec(token);
    if (!m) return undefined;
    const obj = await this.store.get(m[1]!);
    const stored = typeof obj?.secretDigest === 'string' ? Buffer.from(obj.secretDigest, 'hex') : undefined;
    const given = Buffer.from(digest(m[2]!), 'hex');
    if (!obj || !stored || stored.length !== given.length || !timingSafeEqual(stored, given)) return undefined;
    return ownerOf(obj, now);
  }

  /** The owner of the token named `name` (already verified once), or undefined once it is revoked or expired. */
  async lookup(name: string, now = Date.now()): Promise<TokenOwner | undefined> {
    const obj = await this.store.get(name);
    return obj ? ownerOf(obj, now) : undefined;
  }
}
