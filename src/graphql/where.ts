/**
 * Typed filters and orders of a model (docs/API.md §13): `{Type}Where` mirrors the object's
 * shape with one entry per indexed path and for metadata.name, metadata.creationTimestamp and
 * metadata.labels; `{Type}Order` has `{PATH}_ASC`/`{PATH}_DESC` per sortable indexed path. A path
 * that is not indexed is not in the types, so it cannot be sent. Both translate into the query
 * layer's requirements and sort (query/types.ts), planned as REST selectors are.
 *
 * Scalar filters: `eq` → in [v], `ne` → notin [v] (matches objects without the field), `in`,
 * `notIn`, `exists` (true: exists, false: notexists), `gt`/`gte`/`lt`/`lte` (range). A numeric
 * index takes numbers (`NumberFilter`), every other one strings (`StringFilter`, index order).
 */
import {
  GraphQLBoolean,
  GraphQLEnumType,
  GraphQLFloat,
  GraphQLInputObjectType,
  GraphQLList,
  GraphQLNonNull,
  GraphQLString,
  type GraphQLInputFieldConfigMap,
  type GraphQLNamedType,
} from 'graphql';
import { BadRequest } from '../errors/index.js';
import { labelKeyProblem, labelValueProblem } from '../query/selector.js';
import type { Requirement, SortSpec } from '../query/types.js';
import type { Model } from '../registry/model.js';
import { GRAPHQL_NAME, typeName } from './naming.js';
import { JSONScalar } from './shared-types.js';

const nonNull = <T extends GraphQLNamedType>(t: T) => new GraphQLNonNull(t);
const listOf = <T extends GraphQLNamedType>(t: T) => new GraphQLList(new GraphQLNonNull(t));

const scalarFilter = (name: string, scalar: typeof GraphQLString | typeof GraphQLFloat, what: string) =>
  new GraphQLInputObjectType({
    name,
    description: `Conditions on one indexed ${what} field; all given ones must hold. ne and notIn also match objects without the field; an array field matches when any element does.`,
    fields: {
      eq: { type: scalar },
      ne: { type: scalar },
      in: { type: listOf(scalar) },
      notIn: { type: listOf(scalar) },
      exists: { type: GraphQLBoolean, description: 'true: the field has a value; false: it has none.' },
      gt: { type: scalar },
      gte: { type: scalar },
      lt: { type: scalar },
      lte: { type: scalar },
    },
  });

export const StringFilter = scalarFilter('StringFilter', GraphQLString, 'text (compared in index order)');
export const NumberFilter = scalarFilter('NumberFilter', GraphQLFloat, 'numeric (compared as numbers)');

export const LabelSelectorOperator = new GraphQLEnumType({
  name: 'LabelSelectorOperator',
  values: { In: { value: 'in' }, NotIn: { value: 'notin' }, Exists: { value: 'exists' }, DoesNotExist: { value: 'notexists' } },
});

export const LabelSelectorRequirement = new GraphQLInputObjectType({
  name: 'LabelSelectorRequirement',
  fields: {
    key: { type: nonNull(GraphQLString) },
    operator: { type: nonNull(LabelSelectorOperator) },
    values: { type: listOf(GraphQLString), description: 'For In and NotIn (at least one); none for Exists and DoesNotExist.' },
  },
});

export const LabelSelector = new GraphQLInputObjectType({
  name: 'LabelSelector',
  description: 'A Kubernetes label selector: every matchLabels pair and every matchExpressions entry must hold.',
  fields: {
    matchLabels: { type: JSONScalar, description: 'A map of label key to value.' },
    matchExpressions: { type: listOf(LabelSelectorRequirement) },
  },
});

/** Shared input types of every model's filters. */
export const WHERE_SHARED_TYPES: GraphQLNamedType[] = [StringFilter, NumberFilter, LabelSelector, LabelSelectorRequirement, LabelSelectorOperator];

const LABELS = 'metadata.labels';
/** Metadata fields with an entry besides the declared path indexes (docs/API.md §13). */
const METADATA = ['metadata.name', 'metadata.creationTimestamp'];

/** An indexed path offered to filters and orders, and the index that answers it. */
interface Entry {
  path: string[];
  index: string;
  numeric: boolean;
}

function entriesOf(model: Model): Entry[] {
  const out: Entry[] = METADATA.map((p) => ({ path: p.split('.'), index: p, numeric: false }));
  for (const ix of model.indexes) {
    if (!ix.path || ix.path.startsWith('metadata.')) continue;
    const path = ix.path.split('.');
    if (!path.every((s) => GRAPHQL_NAME.test(s))) continue; // not expressible in GraphQL
    if (out.some((e) => e.path.join('.') === ix.path)) continue;
    out.push({ path, index: ix.name, numeric: ix.numeric === true });
  }
  return out;
}

/** `spec.creationTimestamp` → `SPEC_CREATION_TIMESTAMP`. */
const upperSnake = (path: string[]): string =>
  path.map((s) => s.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase()).join('_');

const upperFirst = (s: string) => (s ? s[0]!.toUpperCase() + s.slice(1) : s);

export interface WhereTypes {
  where: GraphQLInputObjectType;
  order: GraphQLEnumType;
  /** Every named type of the model's filters and order (for name checks). */
  named: GraphQLNamedType[];
  /** Translates a `where` value into label and field requirements (400 on bad values). */
  requirements(where: unknown): { labels: Requirement[]; fields: Requirement[] };
}

interface Tree {
  entry?: Entry;
  children: Map<string, Tree>;
}

const cache = new WeakMap<Model, WhereTypes>();

/** The typed filter and order of a model (one instance per model: connections and subscriptions share it). */
export function buildWhereTypes(model: Model): WhereTypes {
  let types = cache.get(model);
  if (!types) cache.set(model, (types = whereTypes(model)));
  return types;
}

function whereTypes(model: Model): WhereTypes {
  const type = typeName(model);
  const entries = entriesOf(model);
  const root: Tree = { children: new Map() };
  const place = (path: string[], entry?: Entry) => {
    let at = root;
    for (const seg of path) {
      let next = at.children.get(seg);
      if (!next) at.children.set(seg, (next = { children: new Map() }));
      at = next;
    }
    if (entry) at.entry = entry;
  };
  for (const e of entries) place(e.path, e);
  place(['metadata', 'labels']);
  const named: GraphQLInputObjectType[] = [];
  const build = (tree: Tree, path: string[]): GraphQLInputObjectType => {
    const t = new GraphQLInputObjectType({
      name: `${type}Where${path.map(upperFirst).join('')}`,
      description: path.length ? `Filters on ${path.join('.')}.` : `Filters on ${model.plural}: every entry must hold (ANDed).`,
      fields: () => {
        const fields: GraphQLInputFieldConfigMap = {};
        for (const [seg, child] of tree.children) {
          const full = [...path, seg];
          if (full.join('.') === LABELS) fields[seg] = { type: LabelSelector };
          else if (child.entry && child.children.size === 0) fields[seg] = { type: child.entry.numeric ? NumberFilter : StringFilter };
          else fields[seg] = { type: build(child, full) };
        }
        return fields;
      },
    });
    named.push(t);
    return t;
  };
  const where = build(root, []);
  // Force the nested types into `named` now (their fields are built lazily otherwise).
  where.getFields();
  for (let i = 0; i < named.length; i++) named[i]!.getFields();

  const values: Record<string, { value: SortSpec; description?: string }> = {};
  for (const e of entries) {
    const base = upperSnake(e.path);
    if (values[`${base}_ASC`]) continue;
    values[`${base}_ASC`] = { value: { field: e.index, direction: 'asc' } };
    values[`${base}_DESC`] = { value: { field: e.index, direction: 'desc' } };
  }
  // The entry of each dotted path (the first one when two share a path), for `translate`.
  const byPath = new Map<string, Entry>();
  for (const e of entries) if (!byPath.has(e.path.join('.'))) byPath.set(e.path.join('.'), e);
  const order = new GraphQLEnumType({
    name: `${type}Order`,
    description: 'Sort terms; earlier ones sort first. Default METADATA_CREATION_TIMESTAMP_DESC, with metadata.name breaking ties.',
    values,
  });
  return {
    where,
    order,
    named: [...named, order],
    requirements: (value) => translate(value, byPath),
  };
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function translate(value: unknown, byPath: ReadonlyMap<string, Entry>): { labels: Requirement[]; fields: Requirement[] } {
  const labels: Requirement[] = [];
  const fields: Requirement[] = [];
  const walk = (v: unknown, path: string) => {
    if (!isObject(v)) return;
    for (const [seg, child] of Object.entries(v)) {
      if (child === null || child === undefined) continue;
      const full = path ? `${path}.${seg}` : seg;
      if (full === LABELS) labels.push(...labelRequirements(child));
      else {
        const entry = byPath.get(full);
        if (entry) fields.push(...scalarRequirements(entry, child));
        else walk(child, full);
      }
    }
  };
  walk(value, '');
  return { labels, fields };
}

function scalarRequirements(entry: Entry, filter: unknown): Requirement[] {
  if (!isObject(filter)) return [];
  const key = entry.index;
  const text = (v: unknown): string => {
    if (entry.numeric) {
      if (typeof v !== 'number' || !Number.isFinite(v)) throw new BadRequest(`where ${entry.path.join('.')}: ${JSON.stringify(v)} is not a number`);
      return String(v);
    }
    return String(v);
  };
  const out: Requirement[] = [];
  for (const [op, v] of Object.entries(filter)) {
    if (v === null || v === undefined) continue;
    switch (op) {
      case 'eq':
        out.push({ key, op: 'in', values: [text(v)] });
        break;
      case 'ne':
        out.push({ key, op: 'notin', values: [text(v)] });
        break;
      case 'in':
      case 'notIn':
        out.push({ key, op: op === 'in' ? 'in' : 'notin', values: [...new Set((v as unknown[]).map(text))] });
        break;
      case 'exists':
        out.push({ key, op: v ? 'exists' : 'notexists', values: [] });
        break;
      case 'gt':
      case 'gte':
      case 'lt':
      case 'lte':
        out.push({ key, op, values: [text(v)] });
        break;
    }
  }
  return out;
}

function labelRequirements(selector: unknown): Requirement[] {
  if (!isObject(selector)) return [];
  const out: Requirement[] = [];
  const check = (key: string, values: string[]) => {
    const problem = labelKeyProblem(key);
    if (problem) throw new BadRequest(`where metadata.labels: invalid label key "${key}": ${problem}`);
    for (const v of values) {
      const p = labelValueProblem(v);
      if (p) throw new BadRequest(`where metadata.labels: invalid label value "${v}": ${p}`);
    }
  };
  const { matchLabels, matchExpressions } = selector as { matchLabels?: unknown; matchExpressions?: unknown };
  if (matchLabels !== undefined && matchLabels !== null) {
    if (!isObject(matchLabels)) throw new BadRequest('where metadata.labels.matchLabels must be an object of label key to value');
    for (const [k, v] of Object.entries(matchLabels)) {
      if (typeof v !== 'string') throw new BadRequest(`where metadata.labels.matchLabels: the value of "${k}" must be a string`);
      check(k, [v]);
      out.push({ key: k, op: 'in', values: [v] });
    }
  }
  for (const e of (matchExpressions ?? []) as { key: string; operator: Requirement['op']; values?: string[] | null }[]) {
    const values = e.values ?? [];
    check(e.key, values);
    if (e.operator === 'in' || e.operator === 'notin') {
      if (values.length === 0) throw new BadRequest(`where metadata.labels: ${e.operator === 'in' ? 'In' : 'NotIn'} on "${e.key}" needs values`);
      out.push({ key: e.key, op: e.operator, values: [...new Set(values)] });
    } else {
      if (values.length > 0) throw new BadRequest(`where metadata.labels: ${e.operator === 'exists' ? 'Exists' : 'DoesNotExist'} on "${e.key}" takes no values`);
      out.push({ key: e.key, op: e.operator, values: [] });
    }
  }
  return out;
}
