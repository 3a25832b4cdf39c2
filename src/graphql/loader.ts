/**
 * Batched reads for one GraphQL operation (docs/API.md §13), never one store query per object:
 *  - `loadObject`: `node`/`nodes` and references; every name asked for one model while a level
 *    of the result is being resolved is read with one store query (operations/get-many.ts);
 *  - `loadConnection`: reverse relations; the first pages that one reverse field with the same
 *    arguments asks for its objects on one level of the result are read together
 *    (operations/list-many.ts: one store query for them all, usually).
 *
 * The loaders live as long as the operation's context object (the one graphql-js hands every
 * nested resolver), in a WeakMap: nothing is kept per gateway. They batch but do not cache: a
 * subscription keeps its context for its whole life, and each event must see the stored objects
 * as they are then; names repeated within one batch are read once.
 */
import DataLoader from 'dataloader';
import type { GraphQLResolveInfo } from 'graphql';
import { getObjects, listConnections, namesPerRead, type ConnectionArgs, type ConnectionResult, type ModelEntry } from '../operations/index.js';
import type { ApiObject } from '../store/object.js';
import type { GraphQLContext } from './context.js';
import { operationContext } from './connections.js';

/** Per operation context: its loaders, by model (objects) or by reverse field and arguments (connections). */
const loaders = new WeakMap<object, Map<unknown, DataLoader<string, unknown>>>();

function loaderOf<V>(ctx: GraphQLContext, key: unknown, make: () => DataLoader<string, V>): DataLoader<string, V> {
  let byKey = loaders.get(ctx);
  if (!byKey) loaders.set(ctx, (byKey = new Map()));
  let loader = byKey.get(key) as DataLoader<string, V> | undefined;
  if (!loader) byKey.set(key, (loader = make()));
  return loader;
}

/** The object `name` of `entry`'s model, or null when there is none; rejects with the denial (an ApiError) or a store failure. */
export function loadObject(ctx: GraphQLContext, entry: ModelEntry, name: string, info: GraphQLResolveInfo): Promise<ApiObject | null> {
  // The objects count against the operation's response limit (not a subscription's: see operationContext).
  const op = operationContext(ctx, info);
  return loaderOf(ctx, entry.model, () => new DataLoader<string, ApiObject | null>((names) => getObjects(op, entry, names), { cache: false })).load(name);
}

/**
 * The first page (`args` holds no cursor) of `entry`'s objects whose index `index` holds `name`;
 * rejects with its refusal (an ApiError: the arguments, the list rule, its plan) or a store failure.
 */
export function loadConnection(ctx: GraphQLContext, info: GraphQLResolveInfo, entry: ModelEntry, index: string, args: ConnectionArgs, name: string): Promise<ConnectionResult> {
  // Only pages of the same query (but for the name) are read together.
  const key = JSON.stringify([entry.model.group, entry.model.version, entry.model.plural, index, args]);
  const loader = loaderOf<ConnectionResult>(
    ctx,
    key,
    () => new DataLoader<string, ConnectionResult>((names) => listConnections(operationContext(ctx, info), entry, args, index, names), { cache: false, maxBatchSize: namesPerRead(args) }),
  );
  return loader.load(name);
}
