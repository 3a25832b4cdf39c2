/**
 * In-memory evaluation of planned conditions, with exactly the semantics the store adapters
 * implement (store/types.ts IndexRequirement). Watch uses it to filter change events; the
 * embedded store or tests may use it as a reference.
 *
 *   in        some value is in the set            (no values → false)
 *   notin     no value is in the set              (no values → true: objects lacking the key match)
 *   exists    at least one value
 *   notexists no value
 *
 * Labels are matched through their `metadata.labels` index values (`k` and `k=v`), the same
 * mapping query/plan.ts uses, so a selector means the same thing in a list and in a watch.
 */
import type { IndexRequirement, RangeOp } from '../store/types.js';
import { numericValue } from '../store/numeric.js';
import type { Requirement } from './types.js';

export const LABELS_INDEX = 'metadata.labels';

/** The `metadata.labels` index values of a label map: the bare key and `key=value` per label. */
export function labelIndexValues(labels: Record<string, string> | undefined): string[] {
  const out: string[] = [];
  for (const [k, v] of Object.entries(labels ?? {})) out.push(k, `${k}=${v}`);
  return out;
}

/** A label requirement as a condition on the `metadata.labels` index. */
export function labelRequirementToIndex(r: Requirement): IndexRequirement {
  switch (r.op) {
    case 'in':
    case 'notin':
      return { index: LABELS_INDEX, op: r.op, values: r.values.map((v) => `${r.key}=${v}`) };
    case 'exists':
      return { index: LABELS_INDEX, op: 'in', values: [r.key] };
    case 'notexists':
      return { index: LABELS_INDEX, op: 'notin', values: [r.key] };
    default:
      throw new Error(`a label requirement has no "${r.op}"`);
  }
}

/** A field requirement as a condition on the index of the same name (1:1). */
export function fieldRequirementToIndex(r: Requirement): IndexRequirement {
  return { index: r.key, op: r.op, values: r.op === 'exists' || r.op === 'notexists' ? [] : [...r.values] };
}

/** Whether an object whose index holds `values` satisfies `req`. */
export function matchesIndexRequirement(values: readonly string[], req: IndexRequirement): boolean {
  switch (req.op) {
    case 'in':
      return values.some((v) => req.values.includes(v));
    case 'notin':
      return !values.some((v) => req.values.includes(v));
    case 'exists':
      return values.length > 0;
    case 'notexists':
      return values.length === 0;
    default:
      return values.some((v) => inRange(v, req.op as RangeOp, req.values[0], req.numeric === true));
  }
}

/** MongoDB and SQLite compare text by UTF-8 bytes, i.e. by code point. */
const byCodePoint = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));

/** Whether one index value compares with `bound` as `op` says (numbers as numbers on a numeric index). */
function inRange(value: string, op: RangeOp, bound: string | undefined, numeric: boolean): boolean {
  if (bound === undefined) return false;
  let c: number;
  if (numeric) {
    const [a, b] = [numericValue(value), numericValue(bound)];
    if (typeof a !== 'number' || typeof b !== 'number') return false;
    c = a - b;
  } else c = byCodePoint(value, bound);
  return op === 'gt' ? c > 0 : op === 'gte' ? c >= 0 : op === 'lt' ? c < 0 : c <= 0;
}

/** Whether an object satisfies every condition; `indexValues(name)` gives its values of an index. */
export function matchesWhere(where: readonly IndexRequirement[], indexValues: (index: string) => readonly string[]): boolean {
  return where.every((req) => matchesIndexRequirement(indexValues(req.index), req));
}

/**
 * Whether an object satisfies parsed selectors. Labels are read from `obj.metadata.labels`;
 * `fieldValue(field)` returns the object's values of the (normalised, indexed) field.
 */
export function matchesSelectors(
  obj: { metadata?: { labels?: Record<string, string> } },
  labels: readonly Requirement[],
  fields: readonly Requirement[],
  fieldValue: (field: string) => readonly string[],
): boolean {
  if (labels.length > 0) {
    const lv = labelIndexValues(obj.metadata?.labels);
    if (!labels.every((r) => matchesIndexRequirement(lv, labelRequirementToIndex(r)))) return false;
  }
  return fields.every((r) => matchesIndexRequirement(fieldValue(r.key), fieldRequirementToIndex(r)));
}
