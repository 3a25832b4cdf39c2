/**
 * Password hashing: scrypt from node:crypto (memory-hard, salted), compared in constant time.
 * Stored form: `$scrypt$N=<n>,r=<r>,p=<p>$<salt b64url>$<hash b64url>`, so the cost can be
 * raised later without invalidating stored hashes.
 */
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

const KEY_LENGTH = 32;
const DEFAULT_COST = { N: 16384, r: 8, p: 1 };
const PREFIX = '$scrypt$';

function derive(password: string, salt: Buffer, opts: ScryptOptions, length = KEY_LENGTH): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(password.normalize('NFC'), salt, length, { ...opts, maxmem: 64 * 1024 * 1024 }, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

export const isPasswordHash = (v: unknown): v is string => typeof v === 'string' && v.startsWith(PREFIX);

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, DEFAULT_COST);
  const { N, r, p } = DEFAULT_COST;
  return `${PREFIX}N=${N},r=${r},p=${p}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

function parse(stored: string): { opts: ScryptOptions; salt: Buffer; key: Buffer } | undefined {
  if (!isPasswordHash(stored)) return undefined;
  const [params, salt, key] = stored.slice(PREFIX.length).split('$');
  const m = /^N=(\d+),r=(\d+),p=(\d+)$/.exec(params ?? '');
  if (!m || !salt || !key) return undefined;
  return { opts: { N: Number(m[1]), r: Number(m[2]), p: Number(m[3]) }, salt: Buffer.from(salt, 'base64url'), key: Buffer.from(key, 'base64url') };
}

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
