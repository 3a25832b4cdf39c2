/**
 * Relay connections (docs/API.md §13): per model `p_{plural}Connection(first, after, last,
 * before, where, orderBy)` → `{edges {cursor node} pageInfo {…} totalCount resourceVersion}`, as
 * the Relay Cursor Connections Specification defines it. Pages are keyset pages of the
 * operations layer (operations/list-page.ts: the same as REST `limit`/`continue`); `totalCount`
 * costs a count, so it is computed only when the query selects it.
 */
import {
  GraphQLBoolean,
  GraphQLInt,
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLString,
  Kind,
  type FieldNode,
  type GraphQLEnumType,
  type GraphQLFieldConfig,
  type GraphQLFieldConfigArgumentMap,
  type GraphQLInputType,
  type GraphQLNamedType,
  type GraphQLOutputType,
  type GraphQLResolveInfo,
  type SelectionSetNode,
} from 'graphql';
import { listConnection, type ConnectionArgs, type ConnectionResult, type ModelEntry, type OperationContext } from '../operations/index.js';
import type { Requirement, SortSpec } from '../query/types.js';
import type { GraphQLContext } from './context.js';
import { typeName } from './naming.js';
import { buildWhereTypes, WHERE_SHARED_TYPES, type WhereTypes } from './where.js';

const nonNull = <T extends GraphQLOutputType>(t: T) => new GraphQLNonNull(t);

export const PageInfo = new GraphQLObjectType({
  name: 'PageInfo',
  description: 'Relay page information.',
  fields: {
    // Resolvers of their own: the side beyond a cursor is read only when asked, and the answer
    // is then a promise (operations/list-page.ts), which graphql-jit awaits only from a resolver.
    hasNextPage: { type: nonNull(GraphQLBoolean), resolve: (p: ConnectionResult['pageInfo']) => p.hasNextPage },
    hasPreviousPage: { type: nonNull(GraphQLBoolean), resolve: (p: ConnectionResult['pageInfo']) => p.hasPreviousPage },
    startCursor: { type: GraphQLString },
    endCursor: { type: GraphQLString },
  },
});

/** Types every model's connection shares. */
export const CONNECTION_SHARED_TYPES: GraphQLNamedType[] = [PageInfo, ...WHERE_SHARED_TYPES];

/** The name of a model's connection field. */
export const connectionFieldName = (listField: string): string => `${listField}Connection`;

/** The names of the types a model's connection brings (name checks, without building them). */
export const connectionTypeNames = (model: ModelEntry['model']): string[] => {
  const type = typeName(model);
  return [`${type}Connection`, `${type}Edge`, ...buildWhereTypes(model).named.map((t) => t.name)];
};

/** Whether the field being resolved selects `name` directly (fragments included). */
function selects(info: GraphQLResolveInfo, name: string): boolean {
  const seen = new Set<string>();
  const inSet = (set: SelectionSetNode | undefined): boolean =>
    !!set?.selections.some((s) => {
      if (s.kind === Kind.FIELD) return s.name.value === name;
      if (s.kind === Kind.INLINE_FRAGMENT) return inSet(s.selectionSet);
      if (seen.has(s.name.value)) return false;
      seen.add(s.name.value);
      return inSet(info.fragments[s.name.value]?.selectionSet);
    });
  return info.fieldNodes.some((f: FieldNode) => inSet(f.selectionSet));
}

/** The arguments of a model's connection (its own field, and reverse relations listing it). */
export function connectionArgs(filters: WhereTypes | { where: GraphQLInputType; order: GraphQLEnumType }): GraphQLFieldConfigArgumentMap {
  return {
    first: { type: GraphQLInt, description: 'Page size from the start or after `after` (1–1000; 20 when neither first nor last is given).' },
    after: { type: GraphQLString, description: 'A cursor of this field, from the same where and orderBy.' },
    last: { type: GraphQLInt, description: 'Page size from the end or before `before` (1–1000).' },
    before: { type: GraphQLString, description: 'A cursor of this field, from the same where and orderBy.' },
    where: { type: filters.where },
    orderBy: { type: new GraphQLList(new GraphQLNonNull(filters.order)) },
  };
}

/** The operations layer's view of a connection field's arguments (`where` typed into requirements: BAD_REQUEST when invalid). */
export function connectionArgsOf(entry: ModelEntry, args: Record<string, unknown>, info: GraphQLResolveInfo, also: Requirement[] = []): ConnectionArgs {
  const { labels, fields } = buildWhereTypes(entry.model).requirements(args.where);
  return {
    labels,
    fields: [...fields, ...also],
    sort: (args.orderBy ?? []) as SortSpec[],
    first: args.first as number | null | undefined,
    after: args.after as string | null | undefined,
    last: args.last as number | null | undefined,
    before: args.before as string | null | undefined,
    total: selects(info, 'totalCount'),
  };
}

/**
 * What a connection needs of the context: the caller, and the operation's response budget. Not in
 * a subscription: its context lasts as long as it does, and each event is an answer of its own
 * (each read then has a budget of its own).
 */
export const operationContext = (ctx: GraphQLContext, info: GraphQLResolveInfo): OperationContext => ({
  caller: ctx.caller,
  authorizer: ctx.authorizer,
  ...(info.operation.operation !== 'subscription' && { budget: ctx.budget }),
});

/**
 * One connection page of `entry` for these arguments; `also` adds requirements the field itself
 * sets (a reverse relation with a cursor: the referring index holds the target's name).
 */
export function resolveConnection(entry: ModelEntry, args: Record<string, unknown>, ctx: GraphQLContext, info: GraphQLResolveInfo, also: Requirement[] = []) {
  return listConnection(operationContext(ctx, info), entry, connectionArgsOf(entry, args, info, also));
}

export interface ConnectionField {
  field: GraphQLFieldConfig<unknown, GraphQLContext>;
}

/** The connection field of a model whose objects are typed `node`. */
export function connectionField(entry: ModelEntry, node: GraphQLOutputType): ConnectionField {
  const { model } = entry;
  const type = typeName(model);
  const filters = buildWhereTypes(model);
  const edge = new GraphQLObjectType({
    name: `${type}Edge`,
    fields: { cursor: { type: nonNull(GraphQLString) }, node: { type: nonNull(node) } },
  });
  const connection = new GraphQLObjectType({
    name: `${type}Connection`,
    description: `A page of ${model.plural} (${model.apiVersion}), Relay style.`,
    fields: {
      edges: { type: nonNull(new GraphQLList(nonNull(edge))) },
      pageInfo: { type: nonNull(PageInfo) },
      totalCount: { type: nonNull(GraphQLInt), description: 'Every match (counted only when selected).' },
      resourceVersion: {
        type: nonNull(GraphQLString),
        description: 'Change-feed position the page was read at; pass it to the watch subscription to follow changes without a gap.',
      },
    },
  });
  const field: GraphQLFieldConfig<unknown, GraphQLContext> = {
    type: nonNull(connection),
    description: `Pages of ${model.plural} (${model.apiVersion}) by cursor. first (default 20) or last: 1–1000; first with after, last with before.`,
    args: connectionArgs(filters),
    resolve: (_src, args, ctx, info) => resolveConnection(entry, args, ctx, info),
  };
  return { field };
}
