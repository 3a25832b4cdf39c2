/**
 * Continue tokens and connection cursors (docs/API.md §12, §13): an opaque text holding a
 * position in a sort order (store/keyset.ts SortKey) and a digest binding it to the query it
 * was issued for: the model, the planned requirements and the sort. A token sent with other
 * selectors, another sort or to another model, or altered, or not a token at all, is a 400
 * (BAD_REQUEST): a keyset position only means something in the order it was taken from.
 *
 * The digest is a SHA-256 of the query and the key, not a secret MAC: gateways sharing one
 * database accept each other's tokens, and a client that forges one can only choose where its
 * own list starts, which its selectors could do anyway.
 */
import { hash } from 'node:crypto';
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
 * SHA-256 in base64url, one-shot: `crypto.hash` takes about half the time of a Hash object for
 * a text this short, and a connection page makes one per edge.
 */
const sha256 = (text: string): string => hash('sha256', text, 'base64url');

/** The digest of `[model, where, sort, key]`, from the scope's text and the key's JSON. */
const digestOf = (scopeText: string, keyJson: string): string => sha256(`${scopeText},${keyJson}]`).slice(0, 22);

const digest = (scope: CursorScope, key: SortKey): string => digestOf(scopeText(scope), JSON.stringify(key));

/** The token of position `key` in `scope`. */
export function encodeCursor(scope: CursorScope, key: SortKey): string {
  return cursorEncoder(scope)(key);
}

/** Tokens of many positions in one scope (a connection's edges): the scope's text is made once. */
export function cursorEncoder(scope: CursorScope): (key: SortKey) => string {
  const text = scopeText(scope);
  return (key) => {
    const json = JSON.stringify(key);
    // JSON.stringify([key, digest]): a digest is base64url, a JSON string as it is.
    return Buffer.from(`[${json},"${digestOf(text, json)}"]`).toString('base64url');
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
  if (key.length !== terms || digest(scope, key) !== parsed[1]) {
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
