/**
 * IndexSpec compilation (docs/API.md §7): the four default indexes,
 * path-based and indexFunc-based declared indexes, value extraction (always strings).
 */
import type { ApiObject } from '../store/object.js';
import type { CompiledIndex, IndexSpec } from './model.js';
// The label index encoding (bare key + key=value) is shared with the query planner.
import { labelIndexValues } from '../query/match.js';
import { scalarValues, valuesAtPath } from '../json/values.js';

export const DEFAULT_INDEX_NAMES = [
  'metadata.name',
  'metadata.labels',
  'metadata.creationTimestamp',
  'metadata.deletionTimestamp',
] as const;

const one = (v: string | undefined): string[] => (v === undefined || v === '' ? [] : [v]);

export const DEFAULT_INDEXES: CompiledIndex[] = [
  {
    name: 'metadata.name',
    unique: true,
    order: 'ASC',
    builtin: true,
    fingerprint: 'builtin:name',
    values: (o) => one(o.metadata?.name),
  },
  {
    name: 'metadata.labels',
    unique: false,
    order: 'ASC',
    builtin: true,
    fingerprint: 'builtin:labels',
    values: (o) => labelIndexValues(o.metadata?.labels),
  },
  {
    name: 'metadata.creationTimestamp',
    unique: false,
    order: 'DESC',
    builtin: true,
    fingerprint: 'builtin:creationTimestamp',
    values: (o) => one(o.metadata?.creationTimestamp),
  },
  {
    name: 'metadata.deletionTimestamp',
    unique: false,
    order: 'ASC',
    builtin: true,
    fingerprint: 'builtin:deletionTimestamp',
    values: (o) => one(o.metadata?.deletionTimestamp),
  },
];

/** Converts an extracted value to index strings; arrays spread, objects/null are skipped. */
const dedupe = (values: string[]): string[] => (values.length < 2 ? values : [...new Set(values)]);

export class IndexSpecError extends Error {}

const PATH = /^[A-Za-z_$][\w$-]*(\.[A-Za-z_$][\w$-]*)*$/;

type Schema = Record<string, unknown>;

/** Follows local `$ref`s (`#`, `#/$defs/X`, `#/definitions/X`) from the root schema. */
function resolveRef(root: Schema, node: Schema | undefined): Schema | undefined {
  for (let hops = 0; node && typeof node.$ref === 'string' && hops < 32; hops++) {
    const ref = node.$ref as string;
    if (ref === '#') node = root;
    else if (ref.startsWith('#/')) {
      let at: unknown = root;
      for (const part of ref.slice(2).split('/')) at = (at as Schema | undefined)?.[part.replace(/~1/g, '/').replace(/~0/g, '~')];
      node = at !== null && typeof at === 'object' ? (at as Schema) : undefined;
    } else return undefined;
  }
  return node;
}

/** Arrays fan out (like valuesAtPath): the schema of their items. */
function unwrapArrays(root: Schema, node: Schema | undefined): Schema | undefined {
  for (let n = 0; node && (node.type === 'array' || node.items !== undefined) && node.properties === undefined && n < 8; n++) {
    node = resolveRef(root, node.items as Schema | undefined);
  }
  return node;
}

/**
 * Whether a path leads, in the model's JSON Schema, to an `integer` or `number` field (docs/API.md §7:
 * such an index sorts numerically and its field selector compares numbers).
 */
export function isNumericPath(schema: Schema | undefined, segs: string[]): boolean {
  if (!schema) return false;
  let node: Schema | undefined = schema;
  for (const seg of segs) {
    node = unwrapArrays(schema, resolveRef(schema, node));
    const props = node?.properties as Record<string, Schema> | undefined;
    node = props && Object.prototype.hasOwnProperty.call(props, seg) ? props[seg] : undefined;
    if (!node) return false;
  }
  node = unwrapArrays(schema, resolveRef(schema, node));
  const t = node?.type;
  const types = Array.isArray(t) ? t.filter((x) => x !== 'null') : [t];
  return types.length > 0 && types.every((x) => x === 'integer' || x === 'number');
}

/**
 * Whether a path leads, in the model's JSON Schema, to one `string` field with no array on the
 * way or at the end (each of its types `string` or `null`): such an index's values are exactly
 * the field's own text, at most one, so a store may filter and sort on the field itself.
 */
export function isTextPath(schema: Schema | undefined, segs: string[]): boolean {
  if (!schema) return false;
  const isArray = (n: Schema) => n.type === 'array' || (Array.isArray(n.type) && n.type.includes('array')) || n.items !== undefined;
  let node: Schema | undefined = resolveRef(schema, schema);
  for (const seg of segs) {
    if (!node || isArray(node)) return false;
    const props = node.properties as Record<string, Schema> | undefined;
    node = resolveRef(schema, props && Object.prototype.hasOwnProperty.call(props, seg) ? props[seg] : undefined);
  }
  if (!node || isArray(node)) return false;
  const t = node.type;
  const types = Array.isArray(t) ? t.filter((x) => x !== 'null') : [t];
  return types.length > 0 && types.every((x) => x === 'string');
}

/** Compiles declared IndexSpecs; throws IndexSpecError on any rule violation. */
export function compileIndexes(specs: IndexSpec[] | undefined, where: string, schema?: Record<string, unknown>): CompiledIndex[] {
  const out: CompiledIndex[] = [...DEFAULT_INDEXES];
  const names = new Set<string>(DEFAULT_INDEX_NAMES);
  for (const [i, spec] of (specs ?? []).entries()) {
    const at = `${where}: indexes[${i}]`;
    if (!spec || typeof spec.name !== 'string' || spec.name.trim() === '') {
      throw new IndexSpecError(`${at}: name is required`);
    }
    if ((DEFAULT_INDEX_NAMES as readonly string[]).includes(spec.name)) {
      throw new IndexSpecError(`${at}: "${spec.name}" is a default index and must not be declared again`);
    }
    if (names.has(spec.name)) throw new IndexSpecError(`${at}: duplicate index name "${spec.name}"`);
    names.add(spec.name);
    const order = spec.order === undefined ? 'ASC' : String(spec.order).toUpperCase();
    if (order !== 'ASC' && order !== 'DESC') throw new IndexSpecError(`${at}: order must be ASC or DESC`);
    const unique = spec.unique === true;
    const hasPath = spec.path !== undefined;
    const hasFunc = spec.indexFunc !== undefined;
    if (hasPath === hasFunc) throw new IndexSpecError(`${at}: give exactly one of path or indexFunc`);
    let values: (o: ApiObject) => string[];
    let source: string;
    let numeric = false;
    let text = false;
    let path: string | undefined;
    if (hasPath) {
      if (typeof spec.path !== 'string' || !PATH.test(spec.path)) {
        throw new IndexSpecError(`${at}: path must be a dotted field path, e.g. spec.slug`);
      }
      const segs = spec.path.split('.');
      values = (o) => dedupe(valuesAtPath(o, segs));
      numeric = isNumericPath(schema, segs);
      text = isTextPath(schema, segs);
      source = `path:${spec.path}`;
      path = spec.path;
    } else {
      if (typeof spec.indexFunc !== 'function') throw new IndexSpecError(`${at}: indexFunc must be a function`);
      const fn = spec.indexFunc;
      values = (o) => {
        const out: string[] = [];
        scalarValues(fn(o), out);
        return dedupe(out);
      };
      source = `func:${fn.toString()}`;
    }
    out.push({
      name: spec.name,
      unique,
      order,
      builtin: false,
      // The type is part of the fingerprint: a model whose index changes type is reindexed.
      fingerprint: `${source}|unique=${unique}|order=${order}${numeric ? '|type=number' : ''}`,
      values,
      ...(path !== undefined && { path }),
      ...(numeric && { numeric }),
      ...(text && { text }),
    });
  }
  return out;
}
