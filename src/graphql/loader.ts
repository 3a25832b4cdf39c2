/**
 * Batched reads by name for one GraphQL operation (docs/API.md §13): `node`/`nodes` and
 * references ask `loadObject`, and every name asked for one model while a level of the result is
 * being resolved is read with one store query (operations/get-many.ts), never one per object.
 *
 * The loaders live as long as the operation's context object (the one graphql-js hands every
 * nested resolver), in a WeakMap: nothing is kept per gateway. They batch but do not cache: a
 * subscription keeps its context for its whole life, and each event must see the stored object
 * as it is then; names repeated within one batch are read once (get-many.ts).
 */
import DataLoader from 'dataloader';
import { getObjects, type ModelEntry } from '../operations/index.js';
import type { Model } from '../registry/model.js';
import type { ApiObject } from '../store/object.js';
import type { GraphQLContext } from './context.js';

const loaders = new WeakMap<object, Map<Model, DataLoader<string, ApiObject | null>>>();

/** The object `name` of `entry`'s model, or null when there is none; rejects with the denial (an ApiError) or a store failure. */
export function loadObject(ctx: GraphQLContext, entry: ModelEntry, name: string): Promise<ApiObject | null> {
  let byModel = loaders.get(ctx);
  if (!byModel) loaders.set(ctx, (byModel = new Map()));
  let loader = byModel.get(entry.model);
  if (!loader) {
    const op = { caller: ctx.caller, authorizer: ctx.authorizer };
    loader = new DataLoader<string, ApiObject | null>((names) => getObjects(op, entry, names), { cache: false });
    byModel.set(entry.model, loader);
  }
  return loader.load(name);
}
