/**
 * StoreQuery -> MongoDB filter and sort over the `_svc.i`/`_svc.s` fields, or a text index's native
 * field (see document.ts), and the commands a list sends (runList).
 */
import type { Collection, Filter, Sort } from 'mongodb';
import { enc, fromDoc, NAME_INDEX, nativePath, OBJECT_PROJECTION, SVC, type StoredDoc } from './document.js';
import type { IndexDescriptor, IndexRequirement, SortTerm, StoreListResult, StoreQuery } from '../types.js';

/** Index name → the native field serving it (text indexes, document.ts nativePath). */
export type NativeFields = ReadonlyMap<string, string>;
export const nativeFields = (indexes: readonly IndexDescriptor[]): NativeFields =>
  new Map(indexes.flatMap((d) => {
    const path = nativePath(d);
    return path ? [[d.name, path] as const] : [];
  }));

const filterField = (index: string, native: NativeFields): string =>
  index === NAME_INDEX ? '_id' : (native.get(index) ?? `${SVC.i}.${enc(index)}`);
export const sortField = (index: string, native: NativeFields): string =>
  index === NAME_INDEX ? '_id' : (native.get(index) ?? `${SVC.s}.${enc(index)}`);

function condition(r: IndexRequirement, native: NativeFields): Filter<StoredDoc> {
  const field = filterField(r.index, native);
  // A text index's one value is its field when that is a string (null or absent: no value).
  const onField = native.has(r.index);
  switch (r.op) {
    // On an array field `$in` matches when some element is listed; `$nin` when none is, which
    // includes documents without the field (the port's notin semantics).
    case 'in':
      return { [field]: { $in: r.values } };
    case 'notin':
      return { [field]: { $nin: r.values } };
    // `_svc.i.<index>` exists only when the object has at least one value (`_id` always exists).
    case 'exists':
      return { [field]: onField ? { $type: 'string' } : { $exists: true } };
    case 'notexists':
      return { [field]: onField ? { $not: { $type: 'string' } } : { $exists: false } };
  }
}

export function toFilter(where: IndexRequirement[], native: NativeFields): Filter<StoredDoc> {
  const parts = where.map((r) => condition(r, native));
  if (parts.length === 0) return {};
  return parts.length === 1 ? parts[0]! : { $and: parts };
}

/** Multi-valued indexes sort by `s` (their smallest value) in both directions. */
export function toSort(sort: SortTerm[], native: NativeFields): Sort {
  const out: Record<string, 1 | -1> = {};
  for (const t of sort) {
    const f = sortField(t.index, native);
    if (!(f in out)) out[f] = t.direction === 'asc' ? 1 : -1;
  }
  return out;
}

/** Windows above this many objects read the page first and count only when it is full. */
const LARGE_WINDOW = 1000;
/**
 * On a server that scans (FerretDB), a page reads up to this many objects beyond its end, so
 * that the page and the total come from one command whenever the matches end within them.
 */
export const SCAN_SPARE = 200;

/**
 * Runs a list. `scans`: the server answers every filter by scanning and decoding the whole
 * collection (FerretDB 1.24: only `{_id: <string>}` is pushed down, query.ts callers measured
 * 2 × the scan for find + count). There a page is read together with up to SCAN_SPARE objects
 * after it: if the matches end within them, their number is the total and no count is sent
 * (one scan instead of two); else the count follows. On MongoDB the page and the count are
 * two index scans, sent at once.
 */
export async function runList(
  objects: Collection<StoredDoc>,
  filter: Filter<StoredDoc>,
  query: StoreQuery,
  scans: boolean,
  native: NativeFields,
): Promise<StoreListResult> {
  if (query.limit === 0) return { items: [], total: await objects.countDocuments(filter) };
  const find = (limit: number | undefined, skip: number) => {
    const cursor = objects.find(filter, { projection: OBJECT_PROJECTION }).sort(toSort(query.sort, native));
    if (skip > 0) cursor.skip(skip);
    // The whole window in the first batch: no getMore round trip for a page.
    if (limit !== undefined) cursor.limit(limit).batchSize(Math.min(limit, LARGE_WINDOW));
    return cursor.toArray();
  };
  if (scans && query.limit !== undefined && query.offset + query.limit + SCAN_SPARE <= LARGE_WINDOW) {
    const window = query.offset + query.limit + SCAN_SPARE;
    const docs = await find(window, 0);
    const total = docs.length < window ? docs.length : await objects.countDocuments(filter);
    return { items: docs.slice(query.offset, query.offset + query.limit).map(fromDoc), total };
  }
  if (query.limit === undefined || query.limit > LARGE_WINDOW) {
    // A large window (an unpaged list) usually holds every match: its total is known without
    // a second pass over the collection (which FerretDB answers by scanning all of it).
    const docs = await find(query.limit, query.offset);
    const complete = (query.limit === undefined || docs.length < query.limit) && (docs.length > 0 || query.offset === 0);
    const total = complete ? query.offset + docs.length : await objects.countDocuments(filter);
    return { items: docs.map(fromDoc), total };
  }
  const [docs, total] = await Promise.all([find(query.limit, query.offset), objects.countDocuments(filter)]);
  return { items: docs.map(fromDoc), total };
}
