/**
 * Builds the gateway's GraphQL schema from the registered models (docs/API.md §5): per model a
 * get and a list query, five mutations and a watch subscription, each carrying `@auth`; plus
 * `me`. The result is already wrapped by the @auth implementation.
 *
 * List arguments: `page: Int`, `size: Int`, and `sort`, `labelSelector`, `fieldSelector` as
 * `[String!]`, repeatable like the REST query parameters (a single string is accepted too,
 * by GraphQL list coercion); terms inside one string are comma-separated as in REST.
 */
import {
  GraphQLBoolean,
  GraphQLInt,
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLSchema,
  GraphQLString,
  extendSchema,
  Kind,
  parse,
  specifiedDirectives,
  type GraphQLFieldConfigMap,
  type GraphQLNamedType,
  type GraphQLNullableType,
} from 'graphql';
import type { ModelEntry } from '../operations/index.js';
import type { Model } from '../registry/model.js';
import { applyAuthDirective, authDirective, authExtensions, type AuthSpec } from './auth-directive.js';
import type { GraphQLContext } from './context.js';
import { buildModelTypes, type ModelTypes } from './json-schema-types.js';
import { CONNECTION_SHARED_TYPES, connectionField, connectionFieldName, connectionTypeNames } from './connections.js';
import { buildWhereTypes } from './where.js';
import { describeModel, GRAPHQL_NAME, modelNames, rootFieldNames, type ModelNames } from './naming.js';
import { canIResolver, meResolver, modelResolvers, type CallerDescription } from './resolvers.js';
import { nodeFields, NodeInterface } from './node.js';
import { addRelations } from './relations.js';
import { JSONScalar, MeType, ObjectMetaInputType, ObjectMetaType, SHARED_TYPE_NAMES, WatchEventTypeEnum } from './shared-types.js';

export class SchemaNameClash extends Error {
  override name = 'SchemaNameClash';
}

type Fields = GraphQLFieldConfigMap<unknown, GraphQLContext>;

const nonNull = <T extends GraphQLNullableType>(t: T) => new GraphQLNonNull(t);
const stringList = new GraphQLList(nonNull(GraphQLString));
const byIdentity = (a: Model, b: Model) =>
  a.group.localeCompare(b.group) || a.version.localeCompare(b.version) || a.kind.localeCompare(b.kind);

/** The types a model adds besides those derived from its JSON Schema. */
function envelopeTypes(names: ModelNames, types: ModelTypes) {
  const list = new GraphQLObjectType({
    name: names.list,
    description: 'One page of a list (a ListResult, docs/API.md §4).',
    fields: {
      page: { type: nonNull(GraphQLInt), description: '1-based page number (1 when size was omitted).' },
      size: { type: nonNull(GraphQLInt) },
      total: { type: nonNull(GraphQLInt), description: 'Matches across all pages.' },
      totalPages: { type: nonNull(GraphQLInt) },
      first: { type: nonNull(GraphQLBoolean) },
      last: { type: nonNull(GraphQLBoolean) },
      hasNext: { type: nonNull(GraphQLBoolean) },
      hasPrevious: { type: nonNull(GraphQLBoolean) },
      items: { type: nonNull(new GraphQLList(nonNull(types.output))) },
      resourceVersion: {
        type: nonNull(GraphQLString),
        description: 'Change-feed position the list was read at; pass it to the watch subscription to resume without a gap.',
      },
    },
  });
  const watchEvent = new GraphQLObjectType({
    name: names.watchEvent,
    fields: {
      type: { type: nonNull(WatchEventTypeEnum) },
      object: { type: types.output, description: 'The object as of the event; null for BOOKMARK.' },
      resourceVersion: { type: nonNull(GraphQLString), description: 'Position of the event in the change feed (opaque).' },
      initialEventsEnd: {
        type: nonNull(GraphQLBoolean),
        description:
          'True on the one BOOKMARK that follows the initial ADDED events of a subscription opened without resourceVersion (at once when nothing matches); resuming from its resourceVersion misses nothing. False on every other event.',
      },
    },
  });
  return { list, watchEvent };
}

/** The GraphQL names a model occupies: root fields and named types. */
function inventory(model: Model): { fields: string[]; types: string[] } {
  const names = modelNames(model);
  const roots = rootFieldNames(names);
  // Every generated type name starts with names.type, so checking it and the root fields
  // first keeps graphql-js from failing with a less helpful message while building types.
  for (const name of [names.type, ...roots.map((f) => f.name)]) {
    if (!GRAPHQL_NAME.test(name)) {
      throw new SchemaNameClash(`${describeModel(model)}: "${name}" is not a valid GraphQL name`);
    }
  }
  const fields = [...roots.map((f) => `${f.root}.${f.name}`), `Query.${connectionFieldName(names.queries.list)}`];
  const types = [...buildModelTypes(model).namedTypes().map((t) => t.name), names.list, names.watchEvent, ...connectionTypeNames(model)];
  return { fields, types };
}

/**
 * Refuses a set of models in which two would get the same GraphQL type or field name, or a
 * model whose names are not valid GraphQL names. Throws SchemaNameClash with a clear message.
 * Meant for `Registry.addCheck`, and run again by every schema build.
 */
export function checkNames(models: readonly Model[]): void {
  const owners = new Map<string, Model>();
  for (const model of [...models].sort(byIdentity)) {
    const { fields, types } = inventory(model);
    for (const entry of [...fields, ...types.map((t) => `type ${t}`)]) {
      const name = entry.startsWith('type ') ? entry.slice(5) : entry.slice(entry.indexOf('.') + 1);
      if (entry.startsWith('type ') && SHARED_TYPE_NAMES.has(name)) {
        throw new SchemaNameClash(`${describeModel(model)}: GraphQL type ${name} is reserved by the gateway`);
      }
      const other = owners.get(entry);
      if (other && other !== model) {
        const what = entry.startsWith('type ') ? `GraphQL type ${name}` : `GraphQL field ${entry}`;
        throw new SchemaNameClash(
          `${describeModel(model)} and ${describeModel(other)} would both define ${what}; change the kind, singular or plural of one of them`,
        );
      }
      owners.set(entry, model);
    }
  }
}

function authFor(model: Model, verb: string, subresource?: string): { extensions: ReturnType<typeof authExtensions> } {
  const spec: AuthSpec = { verb, resource: model.plural, group: model.group, version: model.version };
  if (subresource) spec.subresource = subresource;
  return { extensions: authExtensions(spec) };
}

/** Custom fields of a plugin (plugins/graphql-extension.ts has the author-facing type). */
export interface SchemaExtension {
  plugin: string;
  extension: { typeDefs: string; resolvers: Record<string, Record<string, (...args: any[]) => unknown>> };
}

export interface BuildOptions {
  /** Resolves the caller's roles and UI permissions for `me` (default: the caller's own roles, no UI permissions). */
  describeCaller?: (caller: GraphQLContext['caller']) => Promise<CallerDescription>;
  /** Custom fields of started plugins, added to the generated schema. */
  extensions?: () => SchemaExtension[];
  /** What a custom field's resolver gets in its context besides `caller` and `authorizer`. */
  extensionContext?: (plugin: string, ctx: GraphQLContext) => Record<string, unknown>;
}

const ROOTS = new Set(['Query', 'Mutation', 'Subscription']);

/**
 * Adds one plugin's custom fields: its SDL extends the schema (graphql-js validates it), every
 * field it adds to Query, Mutation or Subscription must declare `@auth` (applied afterwards with
 * the generated ones), and its resolvers are attached with the plugin's context.
 */
function applyExtension(schema: GraphQLSchema, ext: SchemaExtension, opts: BuildOptions): GraphQLSchema {
  const where = `plugin "${ext.plugin}" graphql`;
  let doc;
  try {
    doc = parse(ext.extension.typeDefs);
  } catch (e) {
    throw new Error(`${where}: typeDefs: ${(e as Error).message}`);
  }
  for (const def of doc.definitions) {
    if ((def.kind === Kind.OBJECT_TYPE_EXTENSION || def.kind === Kind.OBJECT_TYPE_DEFINITION) && ROOTS.has(def.name.value)) {
      for (const f of def.fields ?? []) {
        if (!f.directives?.some((d) => d.name.value === 'auth')) {
          throw new Error(`${where}: field ${def.name.value}.${f.name.value} must declare @auth(verb, resource, group, version)`);
        }
      }
    }
  }
  let out: GraphQLSchema;
  try {
    out = extendSchema(schema, doc);
  } catch (e) {
    throw new Error(`${where}: ${(e as Error).message}`);
  }
  for (const [typeName, fields] of Object.entries(ext.extension.resolvers ?? {})) {
    const type = out.getType(typeName);
    if (!(type instanceof GraphQLObjectType)) throw new Error(`${where}: resolvers for unknown type ${typeName}`);
    for (const [name, fn] of Object.entries(fields)) {
      const field = type.getFields()[name];
      if (!field || typeof fn !== 'function') throw new Error(`${where}: resolver ${typeName}.${name} has no field, or is not a function`);
      const key = typeName === 'Subscription' ? 'subscribe' : 'resolve';
      field[key] = (root: unknown, args: unknown, ctx: GraphQLContext, info: unknown) =>
        fn(root, args, { ...ctx, plugin: ext.plugin, ...opts.extensionContext?.(ext.plugin, ctx) }, info) as never;
      if (key === 'subscribe') field.resolve = (payload: unknown) => payload;
    }
  }
  return out;
}

/** Builds the schema for these entries. Throws SchemaNameClash on a name clash. */
export function buildGatewaySchema(entries: readonly ModelEntry[], opts: BuildOptions = {}): GraphQLSchema {
  const sorted = [...entries].sort((a, b) => byIdentity(a.model, b.model));
  checkNames(sorted.map((e) => e.model));

  const query: Fields = {
    me: { type: nonNull(MeType), description: 'The caller.', resolve: meResolver(opts.describeCaller) },
    canI: {
      type: nonNull(GraphQLBoolean),
      description:
        'Whether the caller may `verb` on `resource` (`plural` or `plural/subresource`) in `group` (empty for platform kinds), optionally on the object `name`.',
      args: {
        verb: { type: nonNull(GraphQLString) },
        group: { type: nonNull(GraphQLString) },
        resource: { type: nonNull(GraphQLString) },
        name: { type: GraphQLString },
        version: { type: GraphQLString, description: 'API version (rules do not depend on it).' },
      },
      resolve: canIResolver(),
    },
    ...nodeFields(sorted),
  };
  const mutation: Fields = {};
  const subscription: Fields = {};
  const extraTypes: GraphQLNamedType[] = [JSONScalar, NodeInterface, ObjectMetaType, ObjectMetaInputType, WatchEventTypeEnum, ...CONNECTION_SHARED_TYPES];

  for (const entry of sorted) {
    const { model } = entry;
    const names = modelNames(model);
    const types = buildModelTypes(model);
    const { list, watchEvent } = envelopeTypes(names, types);
    const filters = buildWhereTypes(model);
    const r = modelResolvers(entry, { object: types.input, status: types.statusInput }, filters.requirements);
    const T = types.output;
    const name = { name: { type: nonNull(GraphQLString) } };
    const kind = `${model.kind} (${model.apiVersion})`;

    query[names.queries.get] = {
      type: T,
      description: `One ${kind} by name, or null.`,
      args: name,
      resolve: r.get,
      ...authFor(model, 'get'),
    };
    query[names.queries.list] = {
      type: nonNull(list),
      description: `Lists ${model.plural} (${model.apiVersion}). sort: "field,asc|desc"; selectors as in REST; each repeatable.`,
      args: {
        page: { type: GraphQLInt, description: '1-based page number.' },
        size: { type: GraphQLInt, description: 'Objects per page; all when omitted.' },
        sort: { type: stringList, description: '`field,asc|desc` on indexed fields; repeatable.' },
        labelSelector: { type: stringList, description: 'Label selector terms, comma-separated; repeatable (ANDed).' },
        fieldSelector: { type: stringList, description: 'Field selector terms on indexed fields; repeatable (ANDed).' },
      },
      resolve: r.list,
      ...authFor(model, 'list'),
    };
    query[connectionFieldName(names.queries.list)] = { ...connectionField(entry, T).field, ...authFor(model, 'list') };
    mutation[names.mutations.create] = {
      type: nonNull(T),
      description: `Creates a ${kind}.`,
      args: { object: { type: nonNull(types.input) } },
      resolve: r.create,
      ...authFor(model, 'create'),
    };
    mutation[names.mutations.update] = {
      type: nonNull(T),
      description: `Replaces a ${kind}; object.metadata.version must be the stored version.`,
      args: { ...name, object: { type: nonNull(types.input) } },
      resolve: r.update,
      ...authFor(model, 'update'),
    };
    mutation[names.mutations.patch] = {
      type: nonNull(T),
      description: `Applies a JSON merge patch (RFC 7396) to a ${kind}.`,
      args: { ...name, patch: { type: nonNull(JSONScalar) } },
      resolve: r.patch,
      ...authFor(model, 'patch'),
    };
    mutation[names.mutations.delete] = {
      type: nonNull(T),
      description: `Deletes a ${kind}; returns it as it stands (deletionTimestamp set).`,
      args: name,
      resolve: r.delete,
      ...authFor(model, 'delete'),
    };
    mutation[names.mutations.updateStatus] = {
      type: nonNull(T),
      description: `Replaces the status of a ${kind}; with \`version\`, only if it is the stored version.`,
      args: { ...name, status: { type: types.statusInput }, version: { type: GraphQLInt } },
      resolve: r.updateStatus,
      ...authFor(model, 'update', 'status'),
    };
    subscription[names.subscriptions.watch] = {
      type: nonNull(watchEvent),
      description: `Changes of ${model.plural} (${model.apiVersion}); without resourceVersion it opens with ADDED for every match.`,
      args: {
        labelSelector: { type: stringList },
        fieldSelector: { type: stringList },
        where: { type: filters.where, description: 'Only events of objects matching it, as a connection with the same where lists them (ANDed with the selectors).' },
        resourceVersion: { type: GraphQLString, description: 'Resume after this position (from a list or an event).' },
      },
      subscribe: r.watch.subscribe,
      resolve: r.watch.resolve as Fields[string]['resolve'],
      ...authFor(model, 'watch'),
    };
  }

  const schema = new GraphQLSchema({
    query: new GraphQLObjectType({ name: 'Query', fields: query }),
    mutation: Object.keys(mutation).length ? new GraphQLObjectType({ name: 'Mutation', fields: mutation }) : undefined,
    subscription: Object.keys(subscription).length
      ? new GraphQLObjectType({ name: 'Subscription', fields: subscription })
      : undefined,
    types: extraTypes,
    directives: [...specifiedDirectives, authDirective],
  });
  let full = addRelations(schema, sorted);
  for (const ext of opts.extensions?.() ?? []) full = applyExtension(full, ext, opts);
  return applyAuthDirective(full);
}
