/**
 * Watch: a stream of ADDED / MODIFIED / DELETED / BOOKMARK / ERROR events for the objects that
 * match the selectors, served from the model's durable change feed (store/feed).
 *
 * Two steps, so transports can refuse a request before accepting a connection:
 *  - `prepareWatch` takes a slot of the caller's watch quota (429), authorizes `watch`, parses
 *    the selectors (400) and the resume point (400) — nothing is subscribed yet;
 *  - `PreparedWatch.start(sink)` lists (without a resume point), subscribes to the store's feed
 *    and hands both to a stream of the gateway's WatchHub (watch/stream.ts), which streams
 *    until stopped or ended. An expired or unknown position ends the stream with ERROR 410.
 *
 * This verb is thin on purpose: what happens to each change (selection, fan-out sharing,
 * reconciliation with the list, bookmarks, re-checks, the quota and the open-stream count)
 * lives in src/watch/, per gateway.
 */
import { ApiError, BadRequest, toApiError, Unavailable } from '../errors/index.js';
import { denial, liveAuthorizer } from '../identity/authorizer.js';
import { parsePosition } from '../store/feed/index.js';
import type { WatchHub } from '../watch/hub.js';
import { watchScope, type WatchScope } from '../watch/rules.js';
import type { WatchStream } from '../watch/stream.js';
import { attributesFor, present, storeFailure } from './common.js';
import { planList, runList } from './list.js';
import { planRequirements } from './list-page.js';
import type { ModelEntry, OperationContext, PreparedWatch, WatchOptions, WatchSink } from './types.js';

/** Authorizes `watch` on the collection; throws Forbidden unless some objects may be watched. */
async function authorizeWatch(ctx: OperationContext, entry: ModelEntry, live = false): Promise<WatchScope> {
  const attrs = attributesFor(ctx, entry, 'watch');
  const scope = watchScope(await (live ? liveAuthorizer(ctx.authorizer) : ctx.authorizer).authorize(attrs));
  if (scope === null) throw denial(attrs);
  return scope;
}

/**
 * A resume point that is not a position at all is the client's mistake (400); a well-formed one
 * the feed no longer holds (or never held) ends the started watch with ERROR 410.
 */
function checkResumePoint(rv: string | undefined): void {
  if (rv === undefined || rv === '' || parsePosition(rv) !== undefined) return;
  const shown = rv.length > 40 ? `${rv.slice(0, 40)}…` : rv;
  throw new BadRequest(
    `resourceVersion "${shown}" is not a change-feed position; resume from the resourceVersion of a list or of an event`,
  );
}

/**
 * Prepares a watch of `entry` for the caller of `ctx`, on the gateway of `ctx.watches`. The quota
 * slot is held from here (429 before any upgrade) until the started stream stops, or `close()`
 * when it never starts.
 */
export async function prepareWatch(ctx: OperationContext, entry: ModelEntry, opts: WatchOptions): Promise<PreparedWatch> {
  const hub = ctx.watches;
  if (!hub) throw new Unavailable('watches are not served to this caller');
  const release = hub.quota.acquire(ctx.caller.username);
  let started = false;
  try {
    const only = await authorizeWatch(ctx, entry);
    // Validates selectors against the indexes exactly as list does (400 on bad input).
    const selected = planList(entry, { labelSelector: opts.labelSelector, fieldSelector: opts.fieldSelector });
    // A typed `where` (GraphQL) is planned as a connection's, so events match as its pages do.
    const query = opts.where
      ? { ...selected, where: [...selected.where, ...planRequirements(entry, opts.where.labels, opts.where.fields, []).where] }
      : selected;
    checkResumePoint(opts.resourceVersion);
    return {
      async start(sink) {
        started = true;
        try {
          const stop = await startWatch(hub, ctx, entry, opts, query, only, sink);
          return () => {
            stop();
            release();
          };
        } catch (e) {
          release();
          throw e;
        }
      },
      close() {
        if (!started) release();
      },
    };
  } catch (e) {
    release();
    throw e;
  }
}

async function startWatch(
  hub: WatchHub,
  ctx: OperationContext,
  entry: ModelEntry,
  opts: WatchOptions,
  query: ReturnType<typeof planList>,
  only: WatchScope,
  sink: WatchSink,
): Promise<() => void> {
  const { store } = entry;
  const w: WatchStream = hub.stream(entry, query.where, (obj) => present(entry, obj), only, sink);
  const onLost = (err: Error) => w.fail(lost(entry, err));
  try {
    if (opts.resourceVersion !== undefined && opts.resourceVersion !== '') {
      w.resumeAt(opts.resourceVersion);
      w.subscribed(await store.watch(opts.resourceVersion, w.onChange, onLost, w.hints));
    } else {
      // List, announce every match as ADDED, then follow the feed from the list's position.
      const initial = await runList(entry, { ...query, offset: 0, limit: undefined });
      w.announce(initial.items, initial.resourceVersion);
      // Changes up to here may already be in the list: reconcile them against it. Not
      // `resourceVersion()`: that is the confirmed prefix of the feed, and on MongoDB the list
      // can already show a write whose feed entry is still pending beyond it (announcing that
      // change again when it is confirmed would repeat an ADDED/MODIFIED the list gave).
      w.reconcileUntil(await store.horizon());
      if (w.ended) return w.stop;
      w.subscribed(await store.watch(initial.resourceVersion, w.onChange, onLost, w.hints));
    }
  } catch (e) {
    w.stop();
    throw lost(entry, e);
  }
  return w.run(() => recheckWatch(ctx, entry), opts);
}

/**
 * The periodic re-check of a running watch: the caller's credentials still hold (a revoked or
 * expired token, a disabled, deleted or re-passworded user ends it with 401: docs/API.md §2),
 * then the right to watch, decided afresh (403).
 */
async function recheckWatch(ctx: OperationContext, entry: ModelEntry): Promise<WatchScope> {
  await ctx.caller.session?.check();
  return authorizeWatch(ctx, entry, true);
}

/** A store failure as the ApiError a watch reports. */
function lost(entry: ModelEntry, err: unknown): ApiError {
  try {
    storeFailure(entry, '', err);
  } catch (e) {
    return toApiError(e);
  }
}
