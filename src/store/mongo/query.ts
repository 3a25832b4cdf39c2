/** StoreQuery -> MongoDB filter and sort over the `_svc.i`/`_svc.s` fields (see document.ts). */
import type { Filter, Sort } from 'mongodb';
import { enc, NAME_INDEX, SVC, type StoredDoc } from './document.js';
import type { IndexRequirement, SortTerm } from '../types.js';

const filterField = (index: string): string => (index === NAME_INDEX ? '_id' : `${SVC.i}.${enc(index)}`);
export const sortField = (index: string): string => (index === NAME_INDEX ? '_id' : `${SVC.s}.${enc(index)}`);

function condition(r: IndexRequirement): Filter<StoredDoc> {
  const field = filterField(r.index);
  switch (r.op) {
    // On an array field `$in` matches when some element is listed; `$nin` when none is, which
    // includes documents without the field (the port's notin semantics).
    case 'in':
      return { [field]: { $in: r.values } };
    case 'notin':
      return { [field]: { $nin: r.values } };
    // `_svc.i.<index>` exists only when the object has at least one value (`_id` always exists).
    case 'exists':
      return { [field]: { $exists: true } };
    case 'notexists':
      return { [field]: { $exists: false } };
  }
}

export function toFilter(where: IndexRequirement[]): Filter<StoredDoc> {
  const parts = where.map(condition);
  if (parts.length === 0) return {};
  return parts.length === 1 ? parts[0]! : { $and: parts };
}

/** Multi-valued indexes sort by `s` (their smallest value) in both directions. */
export function toSort(sort: SortTerm[]): Sort {
  const out: Record<string, 1 | -1> = {};
  for (const t of sort) {
    const f = sortField(t.index);
    if (!(f in out)) out[f] = t.direction === 'asc' ? 1 : -1;
  }
  return out;
}
