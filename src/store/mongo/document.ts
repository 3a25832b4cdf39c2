/**
 * How one object is stored in its model's collection:
 *
 *   { _id: metadata.name, v: metadata.version, g: incarnation id, o: JSON text of the object,
 *     f: change-feed position of the write that produced this state (feed.ts),
 *     i: { <enc(index)>: [values] },     filter field, multikey index `f:<index>`
 *     s: { <enc(index)>: smallest value } sort field, index `s:<index>` = { s.<enc>: dir, _id: 1 } }
 *
 * - The object is kept as JSON text: label and annotation keys contain `.` (and may start with
 *   `$`), which FerretDB rejects as field names; and nothing ever queries inside it.
 * - `metadata.name` has no i/s entry: `_id` is its (unique) index.
 * - An object without values for an index has no `i`/`s` entry for it, so `$exists` answers
 *   exists/notexists, and missing values sort first ascending, last descending (BSON order).
 * - `g` is a random id set on create and kept by updates. It tells apart two objects that had the
 *   same name at different times (unique-value claims, see claims.ts).
 */
import type { ApiObject } from '../object.js';
import type { IndexDescriptor, StorageModel } from '../types.js';

export const NAME_INDEX = 'metadata.name';
export const CREATION_INDEX = 'metadata.creationTimestamp';

export interface StoredDoc {
  _id: string;
  v: number;
  g: string;
  o: string;
  /** Feed position of the write that produced this state (absent on objects from before the feed). */
  f?: string;
  i: Record<string, string[]>;
  s: Record<string, string>;
  /**
   * Written by a process that could not compute every index of the model (an older plugin
   * version lacking a newer version's indexFunc): the newer process recomputes it on its next
   * sync (indexes.ts).
   */
  r?: true;
}

/** Makes an index name usable as one field name: no `.` (path separator) and no `$`. Reversible. */
export const enc = (index: string): string =>
  index.replace(/%/g, '%25').replace(/\./g, '%2E').replace(/\$/g, '%24');

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

/** The `i`/`s` fields of an object for the given indexes. */
export function indexFields(
  model: StorageModel,
  obj: ApiObject,
  indexes: IndexDescriptor[] = secondaryIndexes(model),
): Pick<StoredDoc, 'i' | 's'> {
  const values = model.indexValues(obj);
  const i: StoredDoc['i'] = {};
  const s: StoredDoc['s'] = {};
  for (const d of indexes) {
    const vals = [...new Set(values[d.name] ?? [])];
    if (vals.length === 0) continue;
    i[enc(d.name)] = vals;
    s[enc(d.name)] = minValue(vals);
  }
  return { i, s };
}

/** How an object is held in a document (objects and feed entries); the one place that knows. */
export type EncodedObject = string;
export const encodeObject = (obj: ApiObject): EncodedObject => JSON.stringify(obj);
export const decodeObject = (o: EncodedObject): ApiObject => JSON.parse(o) as ApiObject;
/** About how many bytes an encoded object takes (the feed's read budget). */
export const encodedSize = (o: EncodedObject): number => o.length;

export function toDoc(model: StorageModel, obj: ApiObject, g: string, f?: string): StoredDoc {
  return { _id: obj.metadata.name, v: obj.metadata.version ?? 0, g, o: encodeObject(obj), f, ...indexFields(model, obj) };
}

export const fromDoc = (doc: Pick<StoredDoc, 'o'>): ApiObject => decodeObject(doc.o);

/** The values an object holds in unique indexes (what claims.ts must reserve). */
export function uniqueValues(model: StorageModel, doc: Pick<StoredDoc, 'i'>): { index: string; value: string }[] {
  return secondaryIndexes(model)
    .filter((d) => d.unique)
    .flatMap((d) => (doc.i?.[enc(d.name)] ?? []).map((value) => ({ index: d.name, value })));
}
