/**
 * How one object is stored in its model's collection (layout 2, docs/API.md §11): a native BSON
 * document that `mongosh`, aggregation pipelines and BI tools read as they are.
 *
 *   { _id: metadata.name,
 *     apiVersion, kind,                                  as written
 *     metadata: { name, version: <number>,
 *                 creationTimestamp: <Date>, deletionTimestamp: <Date>,
 *                 finalizers: [..],
 *                 labels: [{k, v}, ..], annotations: [{k, v}, ..],
 *                 <any other field as written> },
 *     spec, status, <any other top-level field>:        native: numbers, booleans, nested
 *                                                         documents and arrays as written
 *     _svc: {                                            what only the gateway reads
 *       v: metadata.version (the compare-and-set compares it, cas.ts),
 *       g: incarnation id, f: change-feed stamp (feed.ts),
 *       i: { <enc(index)>: [values] },      filter field, multikey index `f:<index>`
 *       s: { <enc(index)>: smallest value }, sort field, index `s:<index>` = { _svc.s.<enc>: dir, _id: 1 }
 *                                           (none for a text index, served by its own field: nativePath)
 *                                           (numeric indexes: canonical number text in i, the
 *                                           number in s, store/numeric.ts)
 *       r?: true,                           index values to recompute (indexes.ts)
 *       t?: { c?, d? },                     the exact creation/deletion timestamp strings, when a
 *                                           BSON Date (milliseconds, printed by toISOString) cannot
 *                                           give them back ("2024-01-01T00:00:00Z", microseconds)
 *       j?: JSON text of the object,        when it cannot be held natively without loss (a
 *                                           string or key that is not well-formed UTF-16, labels
 *                                           that are not a map, nesting deeper than MAX_NATIVE_DEPTH);
 *                                           the native fields are still written, as close as they go
 *     } }
 *
 * Keys: every key inside spec, status, metadata (other than the fields above) and any other
 * top-level field is escaped reversibly, at any depth: `%` → `%25`, `.` → `%2E`, NUL → `%00`,
 * a leading `$` → `%24`, the key `__proto__` → `%5F_proto__`, and the empty key → `%` (alone;
 * an escaped key never holds a bare `%` otherwise). Top-level keys starting with `_` (which
 * would meet `_id`/`_svc`) get `%5F` for it. Decoding turns every `%XX` back into its
 * character. FerretDB 1.24 refuses keys with `.` or a leading `$`, and empty keys.
 * Arrays: an array directly inside an array is held as `{ "%[]": [..] }` (FerretDB 1.24 refuses
 * nested arrays), on both servers so the layout is one.
 *
 * The gateway's own queries filter and sort on `_svc.i`/`_svc.s` (index values as the query
 * planner defines them: strings, the smallest value of a multi-valued index), except for a text
 * index (one string field reached through no array, not unique: nativePath), whose one value is
 * the field itself: it is queried and indexed there, with no copy under `_svc`. Every other path
 * index additionally gets a plain MongoDB index on its real path (`p:<index>`, indexes.ts), so
 * the database's own tools query `spec.age` from an index.
 *
 * - `metadata.name` has no i/s entry: `_id` is its (unique) index.
 * - An object without values for an index has no `i`/`s` entry for it, so `$exists` answers
 *   exists/notexists, and missing values sort first ascending, last descending (BSON order).
 * - `g` is a random id set on create and kept by updates. It tells apart two objects that had the
 *   same name at different times (unique-value claims, see claims.ts).
 * - Layout 1 (before): `{ _id, v, g, o: JSON text, f, i, s, r }`; upgraded in place by
 *   layout.ts on the first start of this version.
 */
import type { ApiObject } from '../object.js';
import type { IndexDescriptor, StorageModel } from '../types.js';
import { canonicalValue, numericSortKey } from '../numeric.js';

export const NAME_INDEX = 'metadata.name';
export const CREATION_INDEX = 'metadata.creationTimestamp';

/** The layout this code writes (recorded per model by layout.ts). */
export const LAYOUT = 2;

/** What only the gateway reads, under `_svc`. */
export interface SvcFields {
  v: number;
  g: string;
  /** Feed position of the write that produced this state (absent on objects from before the feed). */
  f?: string;
  i: Record<string, string[]>;
  /** Smallest value; a number for numeric indexes (store/numeric.ts). */
  s: Record<string, string | number>;
  /**
   * Written by a process that could not compute every index of the model (an older plugin
   * version lacking a newer version's indexFunc): the newer process recomputes it on its next
   * sync (indexes.ts).
   */
  r?: true;
  t?: { c?: string; d?: string };
  j?: string;
}

export interface StoredDoc {
  _id: string;
  _svc: SvcFields;
  [field: string]: unknown;
}

/** Field paths of the gateway's own fields (filters, projections, updates). */
export const SVC = {
  v: '_svc.v',
  g: '_svc.g',
  f: '_svc.f',
  i: '_svc.i',
  s: '_svc.s',
  r: '_svc.r',
} as const;

/** The filter that matches object `name` only at version `v` of incarnation `g`. */
export const casFilter = (name: string, g: string, v: number): Record<string, unknown> => ({ _id: name, [SVC.v]: v, [SVC.g]: g });

/** Projection of what a compare-and-set or a claim check reads. */
export const VERSION_PROJECTION = { [SVC.v]: 1, [SVC.g]: 1 } as const;

/** Projection of everything fromDoc needs (the object, without index values). */
export const OBJECT_PROJECTION = { [SVC.i]: 0, [SVC.s]: 0 } as const;

/** Makes an index name usable as one field name: no `.` (path separator) and no `$`. Reversible. */
export const enc = (index: string): string =>
  index.replace(/%/g, '%25').replace(/\./g, '%2E').replace(/\$/g, '%24');

/** Escapes one key of a free-form map (see the header). */
export function escapeKey(k: string): string {
  if (k === '') return '%';
  if (k === '__proto__') return '%5F_proto__';
  let out = /[%.\0]/.test(k) ? k.replace(/[%.\0]/g, (c) => (c === '%' ? '%25' : c === '.' ? '%2E' : '%00')) : k;
  if (out.charCodeAt(0) === 36 /* $ */) out = '%24' + out.slice(1);
  return out;
}

/** Reverses escapeKey (and escapeTopKey). */
export function unescapeKey(k: string): string {
  if (k === '%') return '';
  if (!k.includes('%')) return k;
  return k.replace(/%([0-9A-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
}

/** A top-level key: escaped like any key, and a leading `_` (would meet `_id`, `_svc`) too. */
const escapeTopKey = (k: string): string => {
  const e = escapeKey(k);
  return e.charCodeAt(0) === 95 /* _ */ ? '%5F' + e.slice(1) : e;
};

/**
 * An array directly inside an array is held as `{ "%[]": [..] }` (FerretDB 1.24 refuses nested
 * arrays); escapeKey never produces this key (it would write `%25[]`).
 */
export const NESTED_ARRAY = '%[]';

/** Deeper than this (MongoDB refuses documents nested over 100 levels), the JSON text is kept. */
export const MAX_NATIVE_DEPTH = 90;

interface EncodeState {
  /** Something did not survive the native form exactly: keep the JSON text too. */
  lossy: boolean;
}

const wellFormed = (s: string): boolean => (s as string & { isWellFormed(): boolean }).isWellFormed();

function encodeValue(v: unknown, st: EncodeState, depth: number): unknown {
  if (typeof v === 'string') {
    if (!wellFormed(v)) st.lossy = true;
    return v;
  }
  if (v === null || typeof v !== 'object') return v;
  if (depth > MAX_NATIVE_DEPTH) {
    st.lossy = true;
    return null;
  }
  if (Array.isArray(v)) return v.map((x) => (Array.isArray(x) ? { [NESTED_ARRAY]: encodeValue(x, st, depth + 2) } : encodeValue(x, st, depth + 1)));
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) {
    if (!wellFormed(k)) st.lossy = true;
    out[escapeKey(k)] = encodeValue(x, st, depth + 1);
  }
  return out;
}

function decodeValue(v: unknown): unknown {
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map(decodeValue);
  if (v instanceof Date) return v.toISOString(); // written by another tool
  if ('_bsontype' in v) {
    const j = (v as { toJSON?: () => unknown }).toJSON;
    return typeof j === 'function' ? j.call(v) : String(v);
  }
  const entries = Object.entries(v);
  if (entries.length === 1 && entries[0]![0] === NESTED_ARRAY && Array.isArray(entries[0]![1])) return decodeValue(entries[0]![1]);
  const out: Record<string, unknown> = {};
  for (const [k, x] of entries) {
    const key = unescapeKey(k);
    if (key === '__proto__') Object.defineProperty(out, key, { value: decodeValue(x), enumerable: true, writable: true, configurable: true });
    else out[key] = decodeValue(x);
  }
  return out;
}

/** A timestamp as a BSON Date, and the string itself when the Date would not give it back. */
function encodeTimestamp(s: unknown, st: EncodeState, depth: number): { value: unknown; raw?: string } {
  if (typeof s !== 'string') return { value: encodeValue(s, st, depth) };
  const d = new Date(s);
  if (Number.isNaN(d.getTime()) || !/^\d{4}-\d\d-\d\dT/.test(s)) return { value: s };
  return d.toISOString() === s ? { value: d } : { value: d, raw: s };
}

const pairsOf = (m: Record<string, unknown>, st: EncodeState, depth: number) =>
  Object.entries(m).map(([k, v]) => {
    if (!wellFormed(k)) st.lossy = true;
    return { k, v: encodeValue(v, st, depth + 1) };
  });

function encodeMetadata(meta: Record<string, unknown>, svc: SvcFields, st: EncodeState): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(meta)) {
    if (k === 'creationTimestamp' || k === 'deletionTimestamp') {
      const t = encodeTimestamp(v, st, 2);
      out[k] = t.value;
      if (t.raw !== undefined) (svc.t ??= {})[k === 'creationTimestamp' ? 'c' : 'd'] = t.raw;
    } else if (k === 'labels' || k === 'annotations') {
      if (v !== null && typeof v === 'object' && !Array.isArray(v)) out[k] = pairsOf(v as Record<string, unknown>, st, 2);
      else {
        st.lossy = true; // only maps are valid; kept exactly by the JSON text
        out[k] = encodeValue(v, st, 2);
      }
    } else out[escapeKey(k)] = encodeValue(v, st, 2);
  }
  return out;
}

function decodeMetadata(meta: Record<string, unknown>, svc: SvcFields): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(meta)) {
    if (k === 'creationTimestamp' || k === 'deletionTimestamp') {
      const raw = svc.t?.[k === 'creationTimestamp' ? 'c' : 'd'];
      out[k] = raw ?? (v instanceof Date ? v.toISOString() : decodeValue(v));
    } else if ((k === 'labels' || k === 'annotations') && Array.isArray(v)) {
      const m: Record<string, unknown> = {};
      for (const p of v as { k: string; v: unknown }[]) {
        if (p.k === '__proto__') Object.defineProperty(m, p.k, { value: decodeValue(p.v), enumerable: true, writable: true, configurable: true });
        else m[p.k] = decodeValue(p.v);
      }
      out[k] = m;
    } else {
      const key = unescapeKey(k);
      if (key === '__proto__') Object.defineProperty(out, key, { value: decodeValue(v), enumerable: true, writable: true, configurable: true });
      else out[key] = decodeValue(v);
    }
  }
  return out;
}

/** The native fields of an object (everything but `_id` and `_svc`), filling `svc.t`/`svc.j`. */
export function nativeFields(obj: ApiObject, svc: SvcFields): Record<string, unknown> {
  const st: EncodeState = { lossy: false };
  const out: Record<string, unknown> = {};
  delete svc.t;
  delete svc.j;
  for (const [k, v] of Object.entries(obj)) {
    if (k === 'metadata' && v !== null && typeof v === 'object' && !Array.isArray(v)) out.metadata = encodeMetadata(v as Record<string, unknown>, svc, st);
    else {
      if (!wellFormed(k)) st.lossy = true;
      out[escapeTopKey(k)] = encodeValue(v, st, 1);
    }
  }
  if (st.lossy) svc.j = JSON.stringify(obj);
  return out;
}

/** Collection names of a model: `ext.<group>.<version>.<plural>` (group "" is `core`). */
export function collectionNames(key: string): { objects: string; claims: string; feed: string } {
  const parts = key.split('/');
  if (parts[0] === '') parts[0] = 'core';
  const base = parts.join('.');
  return { objects: `ext.${base}`, claims: `claims.${base}`, feed: `feed.${base}` };
}

/** Secondary indexes: every index except metadata.name (served by `_id`). */
export const secondaryIndexes = (model: StorageModel): IndexDescriptor[] =>
  model.indexes.filter((d) => d.name !== NAME_INDEX);

/** MongoDB compares strings by UTF-8 bytes, i.e. by code point; JS `<` compares UTF-16 units. */
const byCodePoint = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));

export const minValue = (values: string[]): string =>
  values.reduce((m, v) => (byCodePoint(v, m) < 0 ? v : m));

/**
 * The native field a path index reads, as a MongoDB path (keys escaped as stored), or undefined
 * when its values exist only under `_svc` (indexFunc, labels, other metadata fields).
 */
export function realPath(d: Pick<IndexDescriptor, 'name' | 'path'>): string | undefined {
  if (d.name === CREATION_INDEX || d.name === 'metadata.deletionTimestamp') return d.name;
  if (!d.path) return undefined;
  const segs = d.path.split('.');
  if (segs[0] === 'metadata' || segs[0]!.startsWith('_')) return undefined;
  return segs.map(escapeKey).join('.');
}

/**
 * The native field that serves a text index (IndexDescriptor.text: one string field, no array
 * on the way) in place of `_svc.i`/`_svc.s`, or undefined when the index keeps its values there.
 * Its one value is the field as stored, so `$in`/`$nin` on the field, `$type: 'string'` for
 * exists and a sort on it mean what they mean on `_svc` (a null or absent field is no value and
 * sorts first ascending, as a missing `_svc.s` entry does). Unique indexes keep `_svc.i`: the
 * unique-value claims read their values from it (claims.ts).
 */
export function nativePath(d: Pick<IndexDescriptor, 'name' | 'path' | 'text' | 'unique'>): string | undefined {
  // (A field nested deeper than MAX_NATIVE_DEPTH is not held natively: encodeValue.)
  return d.text && !d.unique && d.path && d.path.split('.').length < MAX_NATIVE_DEPTH ? realPath(d) : undefined;
}

/** The `i`/`s` fields of an object for the given indexes (text indexes have none, nativePath). */
export function indexFields(
  model: StorageModel,
  obj: ApiObject,
  indexes: IndexDescriptor[] = secondaryIndexes(model),
): Pick<SvcFields, 'i' | 's'> {
  const values = model.indexValues(obj);
  const i: SvcFields['i'] = {};
  const s: SvcFields['s'] = {};
  for (const d of indexes) {
    if (nativePath(d)) continue;
    const raw = values[d.name] ?? [];
    const vals = [...new Set(d.numeric ? raw.map(canonicalValue) : raw)];
    if (vals.length === 0) continue;
    i[enc(d.name)] = vals;
    s[enc(d.name)] = d.numeric ? numericSortKey(vals)! : minValue(vals);
  }
  return { i, s };
}

/** How an object is held in a feed entry (feed.ts): JSON text; the one place that knows. */
export type EncodedObject = string;
export const encodeObject = (obj: ApiObject): EncodedObject => JSON.stringify(obj);
export const decodeObject = (o: EncodedObject): ApiObject => JSON.parse(o) as ApiObject;
/** About how many bytes an encoded object takes (the feed's read budget). */
export const encodedSize = (o: EncodedObject): number => o.length;

export function toDoc(model: StorageModel, obj: ApiObject, g: string, f?: string): StoredDoc {
  const svc: SvcFields = { v: obj.metadata.version ?? 0, g, ...(f !== undefined && { f }), ...indexFields(model, obj) };
  return { _id: obj.metadata.name, ...nativeFields(obj, svc), _svc: svc };
}

/** The object a document holds (any projection that keeps the object and `_svc.t`/`_svc.j`). */
export function fromDoc(doc: Pick<StoredDoc, '_svc'> & Record<string, unknown>): ApiObject {
  const svc = doc._svc ?? ({} as SvcFields);
  if (svc.j !== undefined) return JSON.parse(svc.j) as ApiObject;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(doc)) {
    if (k === '_id' || k === '_svc') continue;
    if (k === 'metadata' && v !== null && typeof v === 'object' && !Array.isArray(v)) out.metadata = decodeMetadata(v as Record<string, unknown>, svc);
    else {
      const key = unescapeKey(k);
      if (key === '__proto__') Object.defineProperty(out, key, { value: decodeValue(v), enumerable: true, writable: true, configurable: true });
      else out[key] = decodeValue(v);
    }
  }
  return out as unknown as ApiObject;
}

/** The values an object holds in unique indexes (what claims.ts must reserve). */
export function uniqueValues(model: StorageModel, svc: Pick<SvcFields, 'i'> | undefined): { index: string; value: string }[] {
  return secondaryIndexes(model)
    .filter((d) => d.unique)
    .flatMap((d) => (svc?.i?.[enc(d.name)] ?? []).map((value) => ({ index: d.name, value })));
}
