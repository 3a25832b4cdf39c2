/**
 * Password hashing: scrypt from node:crypto (memory-hard, salted), compared in constant time.
 * Stored form: `$scrypt$N=<n>,r=<r>,p=<p>$<salt b64url>$<hash b64url>`: each hash names its own
 * cost, so hashes made at an older cost still verify, and a successful login rehashes them at
 * the current one (`needsRehash`, `rehashPassword`).
 *
 * The cost is OWASP's recommendation for scrypt (Password Storage Cheat Sheet): N = 2^17, r = 8,
 * p = 1, i.e. 128 MiB and a few hundred milliseconds per hash. Node refuses more than 32 MiB by
 * default, hence `maxmem`. The hashes run on libuv's thread pool (4 threads by default), which
 * bounds the memory of concurrent logins; the failed-login limits bound what guesses can start.
 */
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

const KEY_LENGTH = 32;
export interface ScryptCost {
  N: number;
  r: number;
  p: number;
}
export const DEFAULT_COST: Readonly<ScryptCost> = Object.freeze({ N: 2 ** 17, r: 8, p: 1 });
const PREFIX = '$scrypt$';
/** Memory scrypt may take: twice what the default cost needs (128 * N * r bytes). */
const MAX_MEM = 2 * 128 * DEFAULT_COST.N * DEFAULT_COST.r;

function derive(password: string, salt: Buffer, opts: ScryptOptions, length = KEY_LENGTH): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(password.normalize('NFC'), salt, length, { ...opts, maxmem: MAX_MEM }, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

export const isPasswordHash = (v: unknown): v is string => typeof v === 'string' && v.startsWith(PREFIX);

async function hashWithSalt(password: string, salt: Buffer, cost: ScryptCost): Promise<string> {
  const key = await derive(password, salt, cost);
  const { N, r, p } = cost;
  return `${PREFIX}N=${N},r=${r},p=${p}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

/** `cost` other than the default only for tests (GatewayOptions.passwordCost). */
export const hashPassword = (password: string, cost: ScryptCost = DEFAULT_COST): Promise<string> => hashWithSalt(password, randomBytes(16), cost);

function parse(stored: string): { opts: ScryptOptions; salt: Buffer; key: Buffer } | undefined {
  if (!isPasswordHash(stored)) return undefined;
  const [params, salt, key] = stored.slice(PREFIX.length).split('$');
  const m = /^N=(\d+),r=(\d+),p=(\d+)$/.exec(params ?? '');
  if (!m || !salt || !key) return undefined;
  return { opts: { N: Number(m[1]), r: Number(m[2]), p: Number(m[3]) }, salt: Buffer.from(salt, 'base64url'), key: Buffer.from(key, 'base64url') };
}

/** True for a hash made at another cost than the current one (rehash it at the next login). */
export function needsRehash(stored: string, cost: ScryptCost = DEFAULT_COST): boolean {
  const o = parse(stored)?.opts;
  return !!o && (o.N !== cost.N || o.r !== cost.r || o.p !== cost.p);
}

/**
 * The hash of the same password at the current cost, with the same salt: the salt stands for
 * "this password" (`passwordStamp`), so a rehash is not taken for a password change.
 */
export async function rehashPassword(password: string, stored: string, cost: ScryptCost = DEFAULT_COST): Promise<string | undefined> {
  const parsed = parse(stored);
  return parsed ? hashWithSalt(password, parsed.salt, cost) : undefined;
}

/**
 * What tells one setting of a password from the next, revealing nothing about it: its random
 * salt, which a new password always changes and a rehash keeps.
 */
export const passwordStamp = (stored: string): string | undefined => parse(stored)?.salt.toString('base64url');

/**
 * Hashes of a random password, one per cost, verified against when the user is unknown (same
 * cost either way). Process-wide on purpose: each computed once, never changed, and they reveal
 * nothing about any gateway.
 */
const dummies = new Map<string, Promise<string>>();

/**
 * True when `password` matches `stored`. Unknown users (stored undefined) cost the same time as
 * a hash at `cost`, the cost new passwords get.
 */
export async function verifyPassword(password: string, stored: string | undefined, cost: ScryptCost = DEFAULT_COST): Promise<boolean> {
  const parsed = stored === undefined ? undefined : parse(stored);
  if (!parsed) {
    const key = `${cost.N},${cost.r},${cost.p}`;
    let dummy = dummies.get(key);
    if (!dummy) dummies.set(key, (dummy = hashPassword(randomBytes(16).toString('hex'), cost)));
    const d = parse(await dummy)!;
    await derive(password, d.salt, d.opts, d.key.length);
    return false;
  }
  const key = await derive(password, parsed.salt, parsed.opts, parsed.key.length);
  return timingSafeEqual(key, parsed.key);
}
