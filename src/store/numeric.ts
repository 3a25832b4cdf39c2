/**
 * Numeric indexes (docs/API.md §7; IndexDescriptor.numeric): shared by both adapters.
 *
 * Index values and requirement values travel as strings. For a numeric index both are brought
 * to one canonical text (`"07"`, `"7.0"`, `"7"` → `"7"`), so equality (field selectors, unique
 * values) compares numbers; the sort key is the number itself, so lists sort numerically.
 * A value that is not a number stays as it is (and sorts after every number).
 */
import type { IndexDescriptor, IndexRequirement } from './types.js';

/** The number a value of a numeric index stands for, or the value itself when it is not one. */
export function numericValue(v: string): number | string {
  if (v.trim() === '' || !/^[\s+\-0-9.eE]+$/.test(v)) return v;
  const n = Number(v);
  return Number.isFinite(n) ? (Object.is(n, -0) ? 0 : n) : v;
}

/** The one text of a value of a numeric index (what equality compares). */
export const canonicalValue = (v: string): string => String(numericValue(v));

/** Names of the numeric indexes of a set of descriptors. */
export const numericIndexes = (indexes: readonly IndexDescriptor[]): Set<string> =>
  new Set(indexes.filter((d) => d.numeric).map((d) => d.name));

/** Requirements with the values of numeric indexes in canonical form. */
export function canonicalWhere(where: IndexRequirement[], numeric: ReadonlySet<string>): IndexRequirement[] {
  if (numeric.size === 0 || !where.some((r) => numeric.has(r.index))) return where;
  return where.map((r) => (numeric.has(r.index) ? { ...r, values: [...new Set(r.values.map(canonicalValue))] } : r));
}

/** The sort key of a numeric index's values: the smallest number (numbers before text). */
export function numericSortKey(values: string[]): number | string | null {
  let best: number | string | null = null;
  for (const v of values) {
    const n = numericValue(v);
    if (best === null) best = n;
    else if (typeof n === 'number') best = typeof best === 'number' ? Math.min(best, n) : n;
    else if (typeof best === 'string' && Buffer.compare(Buffer.from(n), Buffer.from(best)) < 0) best = n;
  }
  return best;
}
