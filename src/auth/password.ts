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
const DEFAULT_COST = { N: 2 ** 17, r: 8, p: 1 };
const PREFIX = '$scrypt$';
/** Memory scrypt may take: twice what the current cost needs (128 * N * r bytes). */
const MAX_MEM = 2 * 128 * DEFAULT_COST.N * DEFAULT_COST.r;

function derive(password: string, salt: Buffer, opts: ScryptOptions, length = KEY_LENGTH): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(password.normalize('NFC'), salt, length, { ...opts, maxmem: MAX_MEM }, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

export const isPasswordHash = (v: unknown): v is string => typeof v === 'string' && v.startsWith(PREFIX);

async function hashWithSalt(password: string, salt: Buffer): Promise<string> {
  const key = await derive(password, salt, DEFAULT_COST);
  const { N, r, p } = DEFAULT_COST;
  return `${PREFIX}N=${N},r=${r},p=${p}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

export const hashPassword = (password: string): Promise<string> => hashWithSalt(password, randomBytes(16));

function parse(stored: string): { opts: ScryptOptions; salt: Buffer; key: Buffer } | undefined {
  if (!isPasswordHash(stored)) return undefined;
  const [params, salt, key] = stored.slice(PREFIX.length).split('$');
  const m = /^N=(\d+),r=(\d+),p=(\d+)$/.exec(params ?? '');
  if (!m || !salt || !key) return undefined;
  return { opts: { N: Number(m[1]), r: Number(m[2]), p: Number(m[3]) }, salt: Buffer.from(salt, 'base64url'), key: Buffer.from(key, 'base64url') };
}

/** True for a hash made at another cost than the current one (rehash it at the next login). */
export function needsRehash(stored: string): boolean {
  const o = parse(stored)?.opts;
  return !!o && (o.N !== DEFAULT_COST.N || o.r !== DEFAULT_COST.r || o.p !== DEFAULT_COST.p);
}

/**
 * The hash of the same password at the current cost, with the same salt: the salt stands for
 * "this password" (`passwordStamp`), so a rehash is not taken for a password change.
 */
export async function rehashPassword(password: string, stored: string): Promise<string | undefined> {
  const parsed = parse(stored);
  return parsed ? hashWithSalt(password, parsed.salt) : undefined;
}

/**
 * What tells one setting of a password from the next, revealing nothing about it: its random
 * salt, which a new password always changes and a rehash keeps.
 */
export const passwordStamp = (stored: string): string | undefined => parse(stored)?.salt.toString('base64url');

/**
 * A hash of a random password, verified against when the user is unknown (same cost either way).
 * Process-wide on purpose: computed once, never changed, and it reveals nothing about any gateway.
 */
let dummy: Promise<string> | undefined;

/** True when `password` matches `stored`. Unknown users (stored undefined) cost the same time. */
export async function verifyPassword(password: string, stored: string | undefined): Promise<boolean> {
  const parsed = stored === undefined ? undefined : parse(stored);
  if (!parsed) {
    dummy ??= hashPassword(randomBytes(16).toString('hex'));
    const d = parse(await dummy)!;
    await derive(password, d.salt, d.opts, d.key.length);
    return false;
  }
  const key = await derive(password, parsed.salt, parsed.opts, parsed.key.length);
  return timingSafeEqual(key, parsed.key);
}
