/**
 * Relations between models (docs/API.md §13): a string property, or an array of strings, of a
 * model's JSON Schema may carry `x-svc-ref: {group, version, kind, field, reverse?}`. Its value
 * names objects of the target model; the GraphQL type enclosing the property gains `field`,
 * typed as the target's type (a list for an array) and resolved by name:
 *  - no such object: null (left out of a list);
 *  - the caller may not `get` it (resource names honoured): null with a FORBIDDEN error at its
 *    path, the rest of the data is returned;
 *  - every name asked for one model while one level of the result resolves is read with one
 *    store query (loader.ts), in queries and in each subscription event alike.
 *
 * `checkRelations` refuses a model whose reference is malformed, names an unknown model, takes
 * a field name its type already has, or asks for `reverse` over an unindexed property (the
 * plugin FAILS with the reason).
 *
 * `reverse: name` adds to the target's type a connection field `name` (the arguments of a
 * connection) listing the referring objects whose indexed property holds the target's name,
 * under the referring model's `list` rule. Each target object has its own keyset page (Relay
 * cursors per target), but the first pages asked with the same arguments on one level of the
 * result are read together (loader.ts, operations/list-many.ts): one store query for them all,
 * usually; with a cursor (`after`, `before`), which belongs to one target's page, the page is
 * read alone. The cost limit (cost.ts) multiplies by the outer page's `first`.
 *
 * The fields are added when a schema is built (`addRelations`), not with each model's cached
 * types: a reference joins two models' types, and either model may be re-registered alone.
 */
import { GraphQLEnumType, GraphQLList, GraphQLObjectType, isInputType, GraphQLString, getNamedType, isListType, isNonNullType, type GraphQLField, type GraphQLFieldConfigMap, type GraphQLOutputType, type GraphQLResolveInfo, type GraphQLSchema } from 'graphql';
import { MapperKind, mapSchema } from '@graphql-tools/utils';
import { ApiError, Forbidden } from '../errors/index.js';
import type { ModelEntry } from '../operations/index.js';
import type { Model } from '../registry/model.js';
import type { ApiObject } from '../store/object.js';
import type { GraphQLContext } from './context.js';
import { buildModelTypes, REF_EXTENSION } from './json-schema-types.js';
import { connectionArgs, connectionArgsOf, resolveConnection } from './connections.js';
import { loadConnection, loadObject } from './loader.js';
import { describeModel, GRAPHQL_NAME, typeName } from './naming.js';

/** Field extension marking a reference field (cost.ts multiplies below a list one). */
export const RELATION_EXTENSION = 'svcRelation';

export interface SvcRef {
  group: string;
  version: string;
  kind: string;
  field: string;
  reverse?: string;
}

/** A reference property as found in a model's GraphQL types. */
interface RefSite {
  type: GraphQLObjectType;
  field: GraphQLField<unknown, unknown>;
  /** The JSON property holding the name(s). */
  key: string;
  list: boolean;
  raw: unknown;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const identity = (r: Pick<SvcRef, 'group' | 'version' | 'kind'>) => `${r.group}/${r.version}/${r.kind}`;
const unwrap = (t: GraphQLOutputType) => (isNonNullType(t) ? t.ofType : t);

/** The reference sites of a model, in the order of its generated types. */
function sitesOf(model: Model): RefSite[] {
  const out: RefSite[] = [];
  for (const type of buildModelTypes(model).namedTypes()) {
    if (!(type instanceof GraphQLObjectType)) continue;
    for (const field of Object.values(type.getFields())) {
      const raw = field.extensions?.[REF_EXTENSION];
      if (raw === undefined) continue;
      const key = (field.extensions?.jsonName as string | undefined) ?? field.name;
      out.push({ type, field, key, list: isListType(unwrap(field.type)), raw });
    }
  }
  return out;
}

/** Dotted JSON paths from the object's root to each field of the model's types (arrays on the way fan out, as index paths do). */
function pathsOf(model: Model): Map<GraphQLField<unknown, unknown>, string[]> {
  const paths = new Map<GraphQLField<unknown, unknown>, string[]>();
  const walk = (type: GraphQLObjectType, prefix: string, seen: Set<GraphQLObjectType>) => {
    if (seen.has(type)) return;
    const inner = new Set(seen).add(type);
    for (const field of Object.values(type.getFields())) {
      if (prefix === '' && field.name !== 'spec' && field.name !== 'status') continue;
      const path = `${prefix}${(field.extensions?.jsonName as string | undefined) ?? field.name}`;
      paths.set(field, [...(paths.get(field) ?? []), path]);
      const named = getNamedType(field.type);
      if (named instanceof GraphQLObjectType) walk(named, `${path}.`, inner);
    }
  };
  walk(buildModelTypes(model).output, '', new Set());
  return paths;
}

/** The reference of a site, or the reason it is malformed. */
function parseRef(site: RefSite): SvcRef | string {
  const r = site.raw;
  if (!isRecord(r)) return 'must be an object {group, version, kind, field, reverse?}';
  for (const k of ['group', 'version', 'kind', 'field'] as const) {
    if (typeof r[k] !== 'string' || (k !== 'group' && r[k] === '')) return `needs "${k}" (a string)`;
  }
  for (const k of Object.keys(r)) if (!['group', 'version', 'kind', 'field', 'reverse'].includes(k)) return `has an unknown key "${k}"`;
  if (!GRAPHQL_NAME.test(r.field as string) || (r.field as string).startsWith('__')) return `field "${String(r.field)}" is not a GraphQL field name`;
  if (r.reverse !== undefined && (typeof r.reverse !== 'string' || !GRAPHQL_NAME.test(r.reverse) || r.reverse.startsWith('__'))) {
    return `reverse "${String(r.reverse)}" is not a GraphQL field name`;
  }
  if (getNamedType(site.field.type) !== GraphQLString) return 'is allowed only on a string property or an array of strings';
  return r as unknown as SvcRef;
}

/**
 * Refuses (throws, with the reason) a reference of an `added` model that is malformed, names a
 * model not in `models`, takes a field its type already has, or asks for `reverse` over an
 * unindexed property or with a name the target already has. For `Registry.addCheck`.
 */
export function checkRelations(models: readonly Model[], added: readonly Model[] = models): void {
  const byIdentity = new Map(models.map((m) => [identity(m), m]));
  const reverseNames = new Map<string, string>();
  for (const model of added) {
    const paths = pathsOf(model);
    const claimed = new Map<GraphQLObjectType, Set<string>>();
    for (const site of sitesOf(model)) {
      const at = `${describeModel(model)}: x-svc-ref on ${paths.get(site.field)?.[0] ?? `${site.type.name}.${site.key}`}`;
      const ref = parseRef(site);
      if (typeof ref === 'string') throw new Error(`${at} ${ref}`);
      const target = byIdentity.get(identity(ref));
      if (!target) throw new Error(`${at} names ${describeModel(ref)}, which is not a registered model (register it first, or in the same plugin)`);
      let taken = claimed.get(site.type);
      if (!taken) claimed.set(site.type, (taken = new Set(Object.keys(site.type.getFields()))));
      if (taken.has(ref.field)) throw new Error(`${at}: field "${ref.field}" is already taken in GraphQL type ${site.type.name}`);
      taken.add(ref.field);
      if (ref.reverse !== undefined) {
        const indexed = (paths.get(site.field) ?? []).some((p) => model.indexes.some((i) => i.path === p));
        if (!indexed) {
          throw new Error(`${at}: reverse "${ref.reverse}" needs the property indexed (add an index with path ${paths.get(site.field)?.[0] ?? site.key})`);
        }
        const targetFields = buildModelTypes(target).output.getFields();
        const key = `${identity(target)}.${ref.reverse}`;
        if (ref.reverse in targetFields || reverseNames.has(key)) {
          throw new Error(`${at}: reverse "${ref.reverse}" is already taken in GraphQL type ${typeName(target)}`);
        }
        reverseNames.set(key, at);
      }
    }
  }
}

/**
 * A `reverse` declaration of a served model: on the target's type, a connection field `field`
 * listing the `source` objects whose index `index` (over the referring property) holds the
 * target's name, under the source model's `list` rule (added by `addRelations`).
 */
export interface ReverseRelation {
  target: ModelEntry;
  source: ModelEntry;
  field: string;
  index: string;
}

/** The reverse relations `entries` declare whose target is served (checked by `checkRelations`). */
export function reverseRelations(entries: readonly ModelEntry[]): ReverseRelation[] {
  const byIdentity = new Map(entries.map((e) => [identity(e.model), e]));
  const out: ReverseRelation[] = [];
  for (const source of entries) {
    const paths = pathsOf(source.model);
    for (const site of sitesOf(source.model)) {
      const ref = parseRef(site);
      if (typeof ref === 'string' || ref.reverse === undefined) continue;
      const target = byIdentity.get(identity(ref));
      const index = source.model.indexes.find((i) => i.path !== undefined && (paths.get(site.field) ?? []).includes(i.path));
      if (target && index) out.push({ target, source, field: ref.reverse, index: index.name });
    }
  }
  return out;
}

/** Resolves one reference: the object, null when missing, a FORBIDDEN error when denied. */
async function resolveOne(ctx: GraphQLContext, entry: ModelEntry, name: unknown, info: GraphQLResolveInfo): Promise<ApiObject | null | Error> {
  if (typeof name !== 'string' || name === '') return null;
  try {
    return await loadObject(ctx, entry, name, info);
  } catch (e) {
    if (e instanceof ApiError && (e.status === 401 || e.status === 403)) return new Forbidden(e.message);
    throw e;
  }
}

/** `schema` with the reference fields of `entries`' models added (references to models not served are left out). */
export function addRelations(schema: GraphQLSchema, entries: readonly ModelEntry[]): GraphQLSchema {
  const byIdentity = new Map(entries.map((e) => [identity(e.model), e]));
  const added = new Map<string, GraphQLFieldConfigMap<Record<string, unknown>, GraphQLContext>>();
  for (const { model } of entries) {
    for (const site of sitesOf(model)) {
      const ref = parseRef(site);
      const entry = typeof ref === 'string' ? undefined : byIdentity.get(identity(ref));
      const target = entry && schema.getType(typeName(entry.model));
      if (typeof ref === 'string' || !entry || !(target instanceof GraphQLObjectType)) continue;
      let fields = added.get(site.type.name);
      if (!fields) added.set(site.type.name, (fields = {}));
      if (ref.field in site.type.getFields() || ref.field in fields) continue;
      const { key } = site;
      const what = `${entry.model.kind} (${entry.model.apiVersion})`;
      fields[ref.field] = site.list
        ? {
            type: new GraphQLList(target),
            description: `The ${what} objects named by \`${key}\` (x-svc-ref), in order; names with no object are left out, denied ones are null with a FORBIDDEN error.`,
            extensions: { [RELATION_EXTENSION]: ref },
            resolve: async (src, _args, ctx, info) => {
              const names = src[key];
              if (!Array.isArray(names)) return null;
              const outcomes = await Promise.all(names.map((n) => resolveOne(ctx, entry, n, info)));
              return outcomes.filter((o) => o !== null);
            },
          }
        : {
            type: target,
            description: `The ${what} named by \`${key}\` (x-svc-ref); null when there is none, or with a FORBIDDEN error when the caller may not get it.`,
            extensions: { [RELATION_EXTENSION]: ref },
            resolve: async (src, _args, ctx, info) => {
              const outcome = await resolveOne(ctx, entry, src[key], info);
              if (outcome instanceof Error) throw outcome;
              return outcome;
            },
          };
    }
  }
  for (const rev of reverseRelations(entries)) {
    const sourceType = typeName(rev.source.model);
    const connection = schema.getType(`${sourceType}Connection`);
    const where = schema.getType(`${sourceType}Where`);
    const order = schema.getType(`${sourceType}Order`);
    if (!(connection instanceof GraphQLObjectType) || !isInputType(where) || !(order instanceof GraphQLEnumType)) continue;
    const targetType = typeName(rev.target.model);
    let fields = added.get(targetType);
    if (!fields) added.set(targetType, (fields = {}));
    const { source, index } = rev;
    fields[rev.field] = {
      type: connection,
      description: `The ${source.model.plural} (${source.model.apiVersion}) whose ${index} names this object (x-svc-ref reverse), as a connection; under the list rule of ${source.model.plural} (denied: null with a FORBIDDEN error). The first pages of every object of a result level asked with the same arguments are read together (one store query, usually); a page after or before a cursor is read on its own.`,
      args: connectionArgs({ where, order }),
      resolve: async (src, args, ctx, info) => {
        const name = (src.metadata as { name?: unknown } | undefined)?.name;
        if (typeof name !== 'string') return null;
        try {
          const cursor = (args.after ?? args.before ?? null) !== null;
          if (cursor) return await resolveConnection(source, args, ctx, info, [{ key: index, op: 'in', values: [name] }]);
          return await loadConnection(ctx, info, source, index, connectionArgsOf(source, args, info), name);
        } catch (e) {
          if (e instanceof ApiError && (e.status === 401 || e.status === 403)) throw new Forbidden(e.message);
          throw e;
        }
      },
    };
  }
  if (added.size === 0) return schema;
  return mapSchema(schema, {
    [MapperKind.OBJECT_TYPE]: (type) => {
      const extra = added.get(type.name);
      if (!extra) return type;
      const config = type.toConfig();
      return new GraphQLObjectType({ ...config, fields: { ...config.fields, ...extra } as typeof config.fields });
    },
  });
}
