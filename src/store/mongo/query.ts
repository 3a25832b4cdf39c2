/**
 * StoreQuery -> MongoDB filter and sort over the `_svc.i`/`_svc.s` fields, or a text index's native
 * field (see document.ts), and the commands a list sends (runList).
 */
import type { Collection, Document, Filter, Sort } from 'mongodb';
import { enc, fromDoc, NAME_INDEX, nativePath, OBJECT_PROJECTION, realPath, SVC, type StoredDoc } from './document.js';
import type { IndexDescriptor, IndexRequirement, KeysetPage, KeysetQuery, SortKey, SortTerm, StoreListResult, StoreQuery } from '../types.js';
import { numericValue } from '../numeric.js';
import { branchesAfter, keysetTerms, type KeysetBranch } from '../keyset.js';

/** Index name → the native field serving it (text indexes, document.ts nativePath). */
export type NativeFields = ReadonlyMap<string, string>;
export const nativeFields = (indexes: readonly IndexDescriptor[]): NativeFields =>
  new Map(indexes.flatMap((d) => {
    const path = nativePath(d);
    return path ? [[d.name, path] as const] : [];
  }));

/** Numeric index → the native field holding its numbers (range requirements compare them there). */
export const numericFields = (indexes: readonly IndexDescriptor[]): NativeFields =>
  new Map(indexes.flatMap((d) => {
    const path = d.numeric ? realPath(d) : undefined;
    return path ? [[d.name, path] as const] : [];
  }));

const filterField = (index: string, native: NativeFields): string =>
  index === NAME_INDEX ? '_id' : (native.get(index) ?? `${SVC.i}.${enc(index)}`);
export const sortField = (index: string, native: NativeFields): string =>
  index === NAME_INDEX ? '_id' : (native.get(index) ?? `${SVC.s}.${enc(index)}`);

const RANGE = { gt: '$gt', gte: '$gte', lt: '$lt', lte: '$lte' } as const;

function condition(r: IndexRequirement, native: NativeFields, numeric?: ReadonlySet<string>, numbers?: NativeFields): Filter<StoredDoc> {
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
    default: {
      // Some value compares so with the bound: `$gt` on an array field matches when an element
      // does; type bracketing keeps text and numbers apart. A numeric index compares its
      // numbers on the native field (its `_svc.i` copies are text), else on its smallest value.
      const op = RANGE[r.op];
      if (!numeric?.has(r.index)) return { [field]: { [op]: r.values[0] ?? '' } };
      const n = numericValue(r.values[0] ?? '');
      if (typeof n !== 'number') return { _id: { $exists: false } };
      return { [numbers?.get(r.index) ?? sortField(r.index, native)]: { [op]: n } };
    }
  }
}

export function toFilter(where: IndexRequirement[], native: NativeFields, numeric?: ReadonlySet<string>, numbers?: NativeFields): Filter<StoredDoc> {
  const parts = where.map((r) => condition(r, native, numeric, numbers));
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
 * two index scans, sent at once: `countDocuments` ($match, then a $group needing no field) needs
 * no document field, so MongoDB's planner may answer it from the index alone (no FETCH) when one
 * indexed predicate bounds it exactly (not checked here: the tests run FerretDB). Not one pass: `$facet` would sort the
 * matches in memory (its sub-pipelines can't use the sort index), and FerretDB 1.24 implements
 * neither `$facet`, `$setWindowFields` nor `$push`; its `count` command and
 * `estimatedDocumentCount` scan like `countDocuments` (measured).
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

/** Projection of a keyset page: the object and its sort values. */
const PAGE_PROJECTION = { [SVC.i]: 0 } as const;

/** The value a document's native text field holds at an (escaped) path, when it is a string. */
function nativeValue(doc: Document, path: string): string | null {
  let at: unknown = doc;
  for (const seg of path.split('.')) at = at !== null && typeof at === 'object' ? (at as Record<string, unknown>)[seg] : undefined;
  return typeof at === 'string' ? at : null;
}

/** A branch after a position (store/keyset.ts) as a filter: BSON orders missing, numbers, strings. */
function branchFilter(terms: SortTerm[], b: KeysetBranch, native: NativeFields): Filter<StoredDoc> {
  const field = (term: number) => sortField(terms[term]!.index, native);
  const onField = (term: number) => native.has(terms[term]!.index);
  const missing = (term: number) => ({ [field(term)]: onField(term) ? { $not: { $type: 'string' } } : { $exists: false } });
  const parts: Filter<StoredDoc>[] = b.prefix.map((p) => (p.value === null ? missing(p.term) : { [field(p.term)]: p.value }));
  const f = field(b.term);
  const v = b.value;
  if (b.cond === 'null') parts.push(missing(b.term));
  else if (b.cond === 'notnull') parts.push({ [f]: onField(b.term) ? { $type: 'string' } : { $exists: true } });
  else if (b.cond === 'gte' || b.cond === 'lte') parts.push({ [f]: { [b.cond === 'gte' ? '$gte' : '$lte']: v } }); // metadata.name
  else if (b.cond === 'gt') parts.push(typeof v === 'number' ? { $or: [{ [f]: { $gt: v } }, { [f]: { $type: 'string' } }] } : { [f]: { $gt: v } });
  else parts.push(typeof v === 'string' && !onField(b.term) && f !== '_id' ? { $or: [{ [f]: { $lt: v } }, { [f]: { $type: 'number' } }] } : { [f]: { $lt: v } });
  return parts.length === 1 ? parts[0]! : { $and: parts };
}

/**
 * A keyset page: one `find` of the filter and the position's branches (a range of the sort
 * index each), in the sort order, limit + 1 documents: the server never returns more, at any
 * depth.
 */
export async function runPage(objects: Collection<StoredDoc>, filter: Filter<StoredDoc>, query: KeysetQuery, native: NativeFields): Promise<KeysetPage> {
  const terms = keysetTerms(query.sort);
  let f = filter;
  if (query.after) {
    const branches = branchesAfter(terms, query.after, query.inclusive).map((b) => branchFilter(terms, b, native));
    const after: Filter<StoredDoc> = branches.length === 0 ? { _id: { $exists: false } } : branches.length === 1 ? branches[0]! : { $or: branches };
    f = Object.keys(filter).length === 0 ? after : { $and: [filter, after] };
  }
  const want = query.limit + 1;
  const docs = await objects
    .find(f, { projection: PAGE_PROJECTION })
    .sort(toSort(terms, native))
    .limit(want)
    .batchSize(want)
    .toArray();
  const page = docs.slice(0, query.limit);
  const keyOf = (doc: StoredDoc): SortKey =>
    terms.map((t) => {
      if (t.index === NAME_INDEX) return doc._id;
      const path = native.get(t.index);
      if (path) return nativeValue(doc, path);
      return doc._svc?.s?.[enc(t.index)] ?? null;
    });
  return { items: page.map(fromDoc), keys: page.map(keyOf), more: docs.length > query.limit };
}
