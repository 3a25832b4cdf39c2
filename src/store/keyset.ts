/**
 * Keyset pages (docs/API.md §12), shared by both adapters: which sort terms make a position
 * unique, an object's position (its sort key), and "strictly after a position" as an ordered
 * list of branches that each adapter turns into index range conditions.
 *
 * Why branches: a position after (v1, …, vk) in a lexicographic order is
 *   (c1 after v1) or (c1 = v1 and c2 after v2) or … or (c1 = v1 … and ck after vk).
 * Read branch by branch, longest equality prefix first, each branch is one contiguous range of
 * the sort index (equality on the leading columns, a bound on the next), and the branches come
 * one after another in the sort order, so a page reads the index from the position on and never
 * the ties or pages before it. "After" itself follows the order both databases use, null (no
 * value) before numbers before text; a descending term reverses it, so after v comes "lower
 * than v" and then the objects without a value.
 */
import { canonicalValue, numericSortKey } from './numeric.js';
import type { ApiObject } from './object.js';
import type { SortKey, SortTerm, SortValue, StorageModel } from './types.js';

export const NAME_INDEX = 'metadata.name';

/** The terms a key holds: the sort up to its first metadata.name (unique), or with it appended. */
export function keysetTerms(sort: readonly SortTerm[]): SortTerm[] {
  const at = sort.findIndex((t) => t.index === NAME_INDEX);
  return at >= 0 ? sort.slice(0, at + 1) : [...sort, { index: NAME_INDEX, direction: 'asc' }];
}

/** MongoDB and SQLite compare text by UTF-8 bytes, i.e. by code point. */
const byCodePoint = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));

/** Order of sort values: null, numbers, text. */
export function compareSortValues(a: SortValue, b: SortValue): number {
  if (a === b) return 0;
  if (a === null) return -1;
  if (b === null) return 1;
  if (typeof a === 'number') return typeof b === 'number' ? a - b : -1;
  if (typeof b === 'number') return 1;
  return byCodePoint(a, b);
}

/** Compares two keys of the same terms in the sort order. */
export function compareKeys(terms: readonly SortTerm[], a: SortKey, b: SortKey): number {
  for (let i = 0; i < terms.length; i++) {
    const c = compareSortValues(a[i] ?? null, b[i] ?? null);
    if (c !== 0) return terms[i]!.direction === 'desc' ? -c : c;
  }
  return 0;
}

/** The sort value of an object for one index of `model`, as the adapters store it. */
export function sortValueOf(model: StorageModel, values: Record<string, string[]>, obj: ApiObject, index: string): SortValue {
  if (index === NAME_INDEX) return obj.metadata.name;
  const d = model.indexes.find((x) => x.name === index);
  const raw = (values[index] ?? []).map(String);
  if (raw.length === 0) return null;
  if (d?.numeric) return numericSortKey([...new Set(raw.map(canonicalValue))]);
  return raw.reduce((m, v) => (byCodePoint(v, m) < 0 ? v : m));
}

/** An object's key for `terms` (keysetTerms of a query's sort). */
export function sortKeyOf(model: StorageModel, obj: ApiObject, terms: readonly SortTerm[]): SortKey {
  const values = model.indexValues(obj);
  return terms.map((t) => sortValueOf(model, values, obj, t.index));
}

/**
 * One range of the order after a position: the terms before `term` equal the key's values
 * (`prefix`), and term `term` is
 *  - `gt`: after `value` ascending (greater: for a number also every text),
 *  - `lt`: lower than `value`, having a value (for a text also every number),
 *  - `gte`, `lte`: the same or equal, on the last term (metadata.name) of an inclusive read,
 *  - `null`: without a value, `notnull`: with any value.
 */
export interface KeysetBranch {
  prefix: { term: number; value: SortValue }[];
  term: number;
  cond: 'gt' | 'lt' | 'gte' | 'lte' | 'null' | 'notnull';
  value: SortValue;
}

/** The ranges after `key` (or at and after it: `inclusive`), in the order they follow it. */
export function branchesAfter(terms: readonly SortTerm[], key: SortKey, inclusive = false): KeysetBranch[] {
  if (key.length !== terms.length) throw new Error('a keyset key must hold one value per term');
  const out: KeysetBranch[] = [];
  for (let i = terms.length - 1; i >= 0; i--) {
    const prefix = key.slice(0, i).map((value, term) => ({ term, value }));
    const v = key[i]!;
    // The last term is metadata.name (never null): there, inclusive means the key itself too.
    const last = inclusive && i === terms.length - 1;
    const branch = (cond: KeysetBranch['cond']): KeysetBranch => ({
      prefix,
      term: i,
      cond: last && cond === 'gt' ? 'gte' : last && cond === 'lt' ? 'lte' : cond,
      value: v,
    });
    if (terms[i]!.direction === 'asc') out.push(branch(v === null ? 'notnull' : 'gt'));
    else if (v !== null) out.push(...(terms[i]!.index === NAME_INDEX ? [branch('lt')] : [branch('lt'), branch('null')]));
  }
  return out;
}
