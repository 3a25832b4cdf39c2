/**
 * IndexSpec compilation (SPEC.md "Index declaration", CONTRACT §7): the four default indexes,
 * path-based and indexFunc-based declared indexes, value extraction (always strings).
 */
import type { ApiObject } from './object.js';
import type { CompiledIndex, IndexSpec } from './model.js';
// The label index encoding (bare key + key=value) is shared with the query planner.
import { labelIndexValues } from '../query/match.js';

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
function collect(value: unknown, out: string[]): void {
  if (value === undefined || value === null) return;
  if (Array.isArray(value)) {
    for (const v of value) collect(v, out);
    return;
  }
  if (typeof value === 'string') out.push(value);
  else if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') out.push(String(value));
}

/** Walks a dotted path; arrays met on the way fan out (multi-valued index). */
export function valuesAtPath(obj: unknown, path: string[]): string[] {
  let current: unknown[] = [obj];
  for (const seg of path) {
    const next: unknown[] = [];
    for (const c of current) {
      const items = Array.isArray(c) ? c : [c];
      for (const item of items) {
        if (item !== null && typeof item === 'object' && !Array.isArray(item) && seg in item) {
          next.push((item as Record<string, unknown>)[seg]);
        }
      }
    }
    current = next;
  }
  const out: string[] = [];
  for (const c of current) collect(c, out);
  return out;
}

const dedupe = (values: string[]): string[] => (values.length < 2 ? values : [...new Set(values)]);

export class IndexSpecError extends Error {}

const PATH = /^[A-Za-z_$][\w$-]*(\.[A-Za-z_$][\w$-]*)*$/;

/** Compiles declared IndexSpecs; throws IndexSpecError on any rule violation. */
export function compileIndexes(specs: IndexSpec[] | undefined, where: string): CompiledIndex[] {
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
    if (hasPath) {
      if (typeof spec.path !== 'string' || !PATH.test(spec.path)) {
        throw new IndexSpecError(`${at}: path must be a dotted field path, e.g. spec.slug`);
      }
      const segs = spec.path.split('.');
      values = (o) => dedupe(valuesAtPath(o, segs));
      source = `path:${spec.path}`;
    } else {
      if (typeof spec.indexFunc !== 'function') throw new IndexSpecError(`${at}: indexFunc must be a function`);
      const fn = spec.indexFunc;
      values = (o) => {
        const out: string[] = [];
        collect(fn(o), out);
        return dedupe(out);
      };
      source = `func:${fn.toString()}`;
    }
    out.push({
      name: spec.name,
      unique,
      order,
      builtin: false,
      fingerprint: `${source}|unique=${unique}|order=${order}`,
      values,
    });
  }
  return out;
}
