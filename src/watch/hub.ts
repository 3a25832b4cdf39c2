/**
 * WatchHub: every piece of watch state of one gateway, created by server.ts (`Gateway.watches`).
 * Two gateways in one process (the tests run several) share none of it:
 *  - `settings` (bookmarks, re-checks, pings, flow limits) and `sendGuard` (graphql-ws slow
 *    consumers), changed with `configure` / `configureSendGuard`;
 *  - `quota`: concurrent watches per user (limits.watchesPerUser);
 *  - `open`: the open streams per model, ended when the registry stops serving a model;
 *  - `fanout`: the selector gates and translation memos;
 *  - `frames`: the batch bytes and the deflate stream of REST WebSocket watches;
 *  - `streams`: the ndjson responses a graceful shutdown ends.
 * The only module-level watch state left is ./encode.ts's memos of event encodings (keyed by
 * immutable event objects, holding nothing of a gateway).
 */
import { SEND_GUARD_DEFAULTS, type SendGuardSettings } from '../transport/send-guard.js';
import { OpenStreams } from '../transport/shutdown.js';
import type { ModelEntry } from '../registry/registry.js';
import type { ApiObject } from '../store/object.js';
import type { IndexRequirement } from '../store/types.js';
import { FanOut } from './fanout.js';
import { FrameEncoder } from './frames.js';
import { OpenWatches } from './open-watches.js';
import { WatchQuota } from './quota.js';
import type { WatchScope } from './rules.js';
import { WATCH_DEFAULTS, type WatchSettings } from './settings.js';
import { WatchStream } from './stream.js';
import type { WatchSink } from './types.js';

/** A registry's announcement that models are no longer served (Registry.onChange). */
export interface RemovalSource {
  onChange(listener: (change: { removed: readonly ModelEntry[]; why?: string }) => void): () => void;
}

export class WatchHub {
  readonly settings: WatchSettings = { ...WATCH_DEFAULTS };
  readonly sendGuard: SendGuardSettings = { ...SEND_GUARD_DEFAULTS };
  readonly quota: WatchQuota;
  readonly open = new OpenWatches();
  readonly fanout = new FanOut();
  readonly frames = new FrameEncoder();
  /** The ndjson watch responses, ended cleanly by a graceful shutdown. */
  readonly streams = new OpenStreams();

  constructor(limits: { watchesPerUser: number }) {
    this.quota = new WatchQuota(limits.watchesPerUser);
  }

  /** Changes settings for watches opened afterwards; `configure()` restores the defaults. */
  configure(s: Partial<WatchSettings> = WATCH_DEFAULTS): void {
    Object.assign(this.settings, s === WATCH_DEFAULTS ? WATCH_DEFAULTS : s);
  }

  /** Changes the settings for graphql-ws sockets guarded afterwards; `configureSendGuard()` restores the defaults. */
  configureSendGuard(s: Partial<SendGuardSettings> = SEND_GUARD_DEFAULTS): void {
    Object.assign(this.sendGuard, s === SEND_GUARD_DEFAULTS ? SEND_GUARD_DEFAULTS : s);
  }

  /** Open watch streams (all models, or one model key). */
  count(modelKey?: string): number {
    return this.open.count(modelKey);
  }

  /** Ends the streams of every model `registry` stops serving (ERROR 410). Returns the unsubscribe. */
  follow(registry: RemovalSource): () => void {
    return registry.onChange(({ removed, why }) => {
      for (const e of removed) {
        const { apiVersion, plural } = e.model;
        this.open.end(e.model.storage.key, `${apiVersion} ${plural} is no longer served${why ? ` (${why})` : ''}`);
      }
    });
  }

  /** A new stream of `entry`'s changes that `where` selects (and `only` names, when set) into `sink`. */
  stream(entry: ModelEntry, where: readonly IndexRequirement[], present: (obj: ApiObject) => ApiObject, only: WatchScope, sink: WatchSink): WatchStream {
    return new WatchStream(this, this.fanout.selection(entry, where, present), only, sink);
  }
}
