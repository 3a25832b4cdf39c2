/**
 * Continue tokens and connection cursors (docs/API.md §12, §13): an opaque text holding a
 * position in a sort order (store/keyset.ts SortKey) and a digest binding it to the query it
 * was issued for: the model, the planned requirements and the sort. A token sent with other
 * selectors, another sort or to another model, or altered, or not a token at all, is a 400
 * (BAD_REQUEST): a keyset position only means something in the order it was taken from.
 *
 * The digest is a 64-bit check value of the query and the key, not a secret MAC: gateways
 * sharing one database accept each other's tokens, and a client that forges one can only choose
 * where its own list starts, which its selectors could do anyway. It catches a token altered or
 * sent with another query, which is all it is for; a cryptographic hash would add no protection
 * (anyone can compute one) and was the largest cost of a connection's edge cursors.
 */
import { BadRequest } from '../errors/index.js';
import type { IndexRequirement, SortKey, SortTerm } from '../store/types.js';
import { keysetTerms } from '../store/keyset.js';

/** Largest accepted `limit` / `first` / `last`. */
export const MAX_LIMIT = 1000;
/** Longest token accepted (a key of a few sort values is far shorter). */
const MAX_TOKEN_CHARS = 8192;

/** What a token is bound to: the model and the planned query. */
export interface CursorScope {
  model: string;
  where: readonly IndexRequirement[];
  sort: readonly SortTerm[];
}

/** Requirements are ANDed: their order (and that of a set's values) does not change the query. */
const canonicalWhere = (where: readonly IndexRequirement[]): string[] =>
  where.map((r) => JSON.stringify([r.index, r.op, r.op === 'in' || r.op === 'notin' ? [...r.values].sort() : r.values])).sort();

/** The scope's canonical text, `[model, where, sort` (the key and `]` follow in a digest). */
const scopeText = (scope: CursorScope): string => {
  const whole = JSON.stringify([scope.model, canonicalWhere(scope.where), keysetTerms(scope.sort)]);
  return whole.slice(0, -1);
};

/**
 * The check value: two 32-bit FNV-1a lanes (different primes) over the UTF-16 code units of a
 * text, carried on from a state, so a connection hashes its scope once and then only each
 * edge's key. `ascii`: whether every unit seen was below 0x80 (the token may then be encoded
 * without a Buffer).
 */
class Check {
  constructor(
    private a = 0x811c9dc5,
    private b = 0x9747b28c,
    public ascii = true,
  ) {}

  add(text: string): this {
    let { a, b } = this;
    let units = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      units |= c;
      a = Math.imul(a ^ c, 0x01000193);
      b = Math.imul(b ^ c, 0x5bd1e995);
    }
    this.a = a;
    this.b = b;
    if (units >= 0x80) this.ascii = false;
    return this;
  }

  copy(): Check {
    return new Check(this.a, this.b, this.ascii);
  }

  /** Eleven base64url characters: the two lanes, each finished with murmur3's final mix. */
  digest(): string {
    const a = mix(this.a);
    const b = mix(this.b ^ this.a);
    const A = ALPHABET_CODES;
    // Six characters of six bits from the first lane (the last holds two), five from the second.
    return String.fromCharCode(
      A[a & 63]!,
      A[(a >>> 6) & 63]!,
      A[(a >>> 12) & 63]!,
      A[(a >>> 18) & 63]!,
      A[(a >>> 24) & 63]!,
      A[a >>> 30]!,
      A[b & 63]!,
      A[(b >>> 6) & 63]!,
      A[(b >>> 12) & 63]!,
      A[(b >>> 18) & 63]!,
      A[(b >>> 24) & 63]!,
    );
  }
}

const mix = (h: number): number => {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
};
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const ALPHABET_CODES = Uint8Array.from(ALPHABET, (c) => c.charCodeAt(0));

/** The state after `[model, where, sort` of a scope. */
const scopeCheck = (scope: CursorScope): Check => new Check().add(scopeText(scope));

/** The digest of `[model, where, sort, key]`, from the scope's state and the key's JSON. */
const digestOf = (scope: Check, keyJson: string): Check => scope.copy().add(',').add(keyJson).add(']');

/** base64url without padding; btoa (about 3× faster than a Buffer) when the text is ASCII. */
const base64url = (text: string, ascii: boolean): string => {
  if (!ascii) return Buffer.from(text).toString('base64url');
  let s = btoa(text);
  if (s.includes('+')) s = s.replaceAll('+', '-');
  if (s.includes('/')) s = s.replaceAll('/', '_');
  const pad = s.indexOf('=');
  return pad < 0 ? s : s.slice(0, pad);
};

/** The token of position `key` in `scope`. */
export function encodeCursor(scope: CursorScope, key: SortKey): string {
  return cursorEncoder(scope)(key);
}

/** Tokens of many positions in one scope (a connection's edges): the scope is hashed once. */
export function cursorEncoder(scope: CursorScope): (key: SortKey) => string {
  const state = scopeCheck(scope);
  return (key) => {
    const json = JSON.stringify(key);
    const check = digestOf(state, json);
    // JSON.stringify([key, digest]): a digest is base64url, a JSON string as it is.
    return base64url(`[${json},"${check.digest()}"]`, check.ascii);
  };
}

/** The position a token holds, or 400 when it is not one of `scope`'s tokens. */
export function decodeCursor(scope: CursorScope, token: string, what = 'continue token'): SortKey {
  const bad = (why: string) => new BadRequest(`invalid ${what}: ${why}; start again without it`);
  if (token.length > MAX_TOKEN_CHARS || !/^[A-Za-z0-9_-]+$/.test(token)) throw bad('not a token of this list');
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    throw bad('not a token of this list');
  }
  const terms = keysetTerms(scope.sort).length;
  const isValue = (v: unknown) => v === null || typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v));
  if (
    !Array.isArray(parsed) ||
    parsed.length !== 2 ||
    !Array.isArray(parsed[0]) ||
    typeof parsed[1] !== 'string' ||
    !(parsed[0] as unknown[]).every(isValue)
  ) {
    throw bad('not a token of this list');
  }
  const key = parsed[0] as SortKey;
  if (key.length !== terms || digestOf(scopeCheck(scope), JSON.stringify(key)).digest() !== parsed[1]) {
    throw bad('it was issued for another query (sort, labelSelector and fieldSelector must stay the same) or was altered');
  }
  return key;
}

/** Strict parse of a count parameter (`limit`): decimal digits, 1 … MAX_LIMIT. */
export function parseLimit(name: string, raw: string | null | undefined): number | undefined {
  if (raw === null || raw === undefined) return undefined;
  const t = raw.trim();
  if (!/^[0-9]+$/.test(t)) throw new BadRequest(`${name} must be an integer from 1 to ${MAX_LIMIT}, got ${JSON.stringify(raw.slice(0, 40))}`);
  return checkLimit(name, Number(t));
}

/** 1 ≤ n ≤ MAX_LIMIT, else 400. */
export function checkLimit(name: string, n: number): number {
  if (!Number.isSafeInteger(n) || n < 1 || n > MAX_LIMIT) throw new BadRequest(`${name} must be an integer from 1 to ${MAX_LIMIT}, got ${String(n)}`);
  return n;
}
