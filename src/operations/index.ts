/**
 * The operations layer: one function per verb. REST handlers (rest/) and GraphQL resolvers
 * (graphql/) are thin adapters over these. Each function authorizes the caller, applies the
 * registry's metadata rules and schema validation, and talks to the model's store.
 * Errors are ApiError subclasses (errors/index.ts).
 */
export type { OperationContext, ModelEntry, ListResult, PatchType, WatchOptions, WatchEvent } from './types.js';
export { getObject } from './get.js';
export { listObjects } from './list.js';
export { createObject } from './create.js';
export { updateObject } from './update.js';
export { patchObject } from './patch.js';
export { deleteObject } from './delete.js';
export { deleteCollection } from './deletecollection.js';
export { getStatus, updateStatus, replaceStatus, patchStatus } from './status.js';
import { prepareWatch as preparePlain, watchObjects as unlimitedWatch, type PreparedWatch } from './watch.js';
import { withWatchQuota } from '../watch/quota.js';
import type { ModelEntry, OperationContext, WatchOptions } from './types.js';
/** The watch operation, counted against the caller's concurrent-watch quota (watch-quota.ts). */
export const watchObjects = withWatchQuota(unlimitedWatch);

/** Prepared watches hold a quota slot from prepare (429 before any upgrade) until stopped or closed. */
const prepareCounted = withWatchQuota(async (ctx: OperationContext, entry: ModelEntry, opts: WatchOptions) => {
  const p = await preparePlain(ctx, entry, opts);
  return { p, close: () => undefined };
});

/**
 * prepareWatch (operations/watch.ts) under the caller's watch quota: the slot is taken here and
 * given back by the stop function of the started stream, or by `close()` when it never starts.
 */
export async function prepareWatch(ctx: OperationContext, entry: ModelEntry, opts: WatchOptions): Promise<PreparedWatch> {
  const held = await prepareCounted(ctx, entry, opts);
  let started = false;
  return {
    async start(sink) {
      started = true;
      try {
        const stop = await held.p.start(sink);
        return () => {
          stop();
          held.close();
        };
      } catch (e) {
        held.close();
        throw e;
      }
    },
    close() {
      if (!started) held.close();
    },
  };
}
export { encodeWatchEvent, encodeWatchEventBytes, errorEvent, type PreparedWatch, type WatchSink } from './watch.js';
export { activeWatchCount, endWatches } from '../watch/open-watches.js';
export { configureWatch, watchSettings, type WatchSettings } from '../watch/settings.js';
