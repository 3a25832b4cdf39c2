/**
 * One started watch, between the store's change feed and a sink: selection and translation
 * (shared through the gateway's FanOut), the resourceNames restriction, the reconciliation of
 * the first changes with the initial list, BOOKMARKs, the periodic re-check of the right, and
 * the end of the stream (stop, or an ERROR event and `sink.end()`). The watch verb
 * (operations/watch.ts) creates it through WatchHub.stream, lists and subscribes to the store,
 * and hands the changes here.
 *
 * Semantics:
 *  - Selectors apply to the object before and after each change (events carry both): leaving the
 *    selection is DELETED, entering it is ADDED, also for changes replayed on resume.
 *  - Without a resume point: ADDED for every current match (`announce`), then one BOOKMARK at
 *    the list's position annotated `k8s.io/initial-events-end: "true"` (at once when nothing
 *    matches; resuming from its resourceVersion misses nothing), then every change after the
 *    list's position; changes the list already reflected are not repeated.
 *  - When asked (`run`'s `bookmarks`), a BOOKMARK every `bookmarkMs` with the latest position;
 *    the right is checked again every `recheckMs` (revoked → ERROR 403 and the end; the caller's
 *    credentials revoked → ERROR 401 and the end); a model that stops being served ends its
 *    streams with ERROR 410 (./open-watches.ts); a stream with a
 *    timeout ends cleanly (`sink.end()` without an ERROR) when it expires.
 *  - With a restricted scope (./rules.ts) events of other objects are never sent; the re-check
 *    updates the scope.
 */
import { ApiError, Forbidden, Gone, Unauthenticated, Unavailable } from '../errors/index.js';
import type { ApiObject } from '../store/object.js';
import type { ChangeEvent, FeedGate, WatchHints } from '../store/types.js';
import { bookmarkEvent, errorEvent } from './encode.js';
import type { FanOut, Selection, SelectorGate } from './fanout.js';
import type { OpenWatches } from './open-watches.js';
import type { WatchScope } from './rules.js';
import type { WatchSettings } from './settings.js';
import type { WatchEvent, WatchSink } from './types.js';

const later = (a: string, b: string) => (a === '' ? b : b === '' ? a : BigInt(a) >= BigInt(b) ? a : b);

export interface StreamParts {
  fanout: FanOut;
  open: OpenWatches;
  settings: Readonly<WatchSettings>;
}

export class WatchStream {
  ended = false;
  private unsubscribe: (() => void) | undefined;
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly untrack: () => void;
  private readonly selGate: SelectorGate;
  /** In the feed's group of this selector: the changes the gate refused moved it on too. */
  private grouped = false;
  private readonly gate: FeedGate;
  /** Latest position seen (every change, matching or not), for bookmarks. */
  private position = '';
  /**
   * Only while replaying the changes that may overlap the initial list (up to `windowEnd`):
   * the version of each object the client knows, to drop changes the list already showed.
   */
  private known: Map<string, { version: number; created: string | undefined }> | undefined;
  private windowEnd = 0n;
  /** Set once nothing but the selector decides which changes this watcher ignores. */
  private gated = false;
  private readonly sendAll: (events: readonly WatchEvent[], audience: number) => void;
  /** For the store's watch: hand this watcher's feed over in groups (store WatchHints). */
  readonly hints: WatchHints;

  constructor(
    private readonly parts: StreamParts,
    private readonly sel: Selection,
    private only: WatchScope,
    private readonly sink: WatchSink,
  ) {
    const { fanout, open } = parts;
    this.selGate = fanout.joinGate(sel);
    this.gate = { key: this.selGate.key, pass: this.selGate.pass, joined: () => void (this.grouped = true) };
    this.hints = { gate: () => (this.gated ? this.gate : undefined), onBatch: this.onBatch };
    this.sendAll = sink.sendBatch
      ? (events, audience) => sink.sendBatch!(events, audience)
      : (events) => {
          for (const e of events) if (!this.ended) sink.send(e);
        };
    this.untrack = open.track(sel.entry.model.storage.key, {
      end: (code, message) => this.fail(code === 410 ? new Gone(message) : new Unavailable(message)),
    });
  }

  readonly stop = (): void => {
    if (this.ended) return;
    this.ended = true;
    for (const t of this.timers) clearTimeout(t);
    this.untrack();
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    this.parts.fanout.leaveGate(this.selGate);
  };

  /** Ends the stream with an ERROR event (once). */
  readonly fail = (err: ApiError): void => {
    if (this.ended) return;
    this.stop();
    this.sink.send(errorEvent(err));
    this.sink.end();
  };

  /** The store subscription, once it runs; stopped with the stream. */
  subscribed(unsubscribe: () => void): void {
    if (this.ended) unsubscribe();
    else this.unsubscribe = unsubscribe;
  }

  /** Resuming after `position`: only changes after it, and the gate decides from the start. */
  resumeAt(position: string): void {
    this.position = position;
    this.gated = true;
  }

  /**
   * The initial list: ADDED for every object in scope, then the BOOKMARK ending the initial
   * events at the list's position; changes up to `windowEnd` are reconciled with the list.
   */
  announce(items: readonly ApiObject[], resourceVersion: string): void {
    this.position = resourceVersion;
    const known = (this.known = new Map());
    for (const obj of items) {
      if (this.only && !this.only.has(obj.metadata.name)) continue;
      known.set(obj.metadata.name, { version: obj.metadata.version ?? 0, created: obj.metadata.creationTimestamp });
      if (!this.ended) this.sink.send({ type: 'ADDED', object: this.sel.present(obj), resourceVersion });
    }
    if (!this.ended) this.sink.send(bookmarkEvent(this.sel.entry.model, resourceVersion, true));
  }

  /** The last position whose changes may already be in the announced list. */
  reconcileUntil(position: string): void {
    this.windowEnd = BigInt(position);
  }

  private translate(e: ChangeEvent): WatchEvent | undefined {
    return this.only && !this.only.has(e.object.metadata.name) ? undefined : this.parts.fanout.translate(this.sel, e);
  }

  /** Reconciles a translated change with what the initial list already told the client. */
  private reconcile(e: ChangeEvent, out: WatchEvent | undefined): WatchEvent | undefined {
    const k = this.known!;
    const { fanout } = this.parts;
    const n = e.object.metadata.name;
    const have = k.get(n);
    const same = have !== undefined && have.created === e.object.metadata.creationTimestamp;
    if (e.type !== 'DELETED' && same && (e.object.metadata.version ?? 0) <= have.version) return undefined;
    if (!out) {
      // Not visible after this change; if the client holds an older state, it must go.
      if (!have) return undefined;
      k.delete(n);
      return fanout.shared(this.sel, e, 'DELETED', e.object);
    }
    if (out.type === 'DELETED') {
      if (!have) return undefined; // the client never saw it
      k.delete(n);
      return out;
    }
    k.set(n, { version: e.object.metadata.version ?? 0, created: e.object.metadata.creationTimestamp });
    if (out.type === 'MODIFIED' && !have) return fanout.shared(this.sel, e, 'ADDED', e.object);
    if (out.type === 'ADDED' && have) return fanout.shared(this.sel, e, 'MODIFIED', e.object);
    return out;
  }

  /** One change of the feed, for this watcher alone. */
  readonly onChange = (e: ChangeEvent): void => {
    if (this.ended) return;
    this.position = e.resourceVersion;
    let out = this.translate(e);
    if (this.known) {
      if (BigInt(e.resourceVersion) > this.windowEnd) {
        this.known = undefined;
        this.gated = true;
      } else out = this.reconcile(e, out);
    }
    if (out) this.sink.send(out);
  };

  /** A read of the feed, for this watcher as a member of its selector's group. */
  private readonly onBatch = (events: readonly ChangeEvent[], audience: number): void => {
    if (this.ended || !events.length) return;
    this.position = events[events.length - 1]!.resourceVersion;
    let outs: readonly WatchEvent[];
    if (this.only) {
      const mine: WatchEvent[] = [];
      for (const e of events) {
        const out = this.translate(e);
        if (out) mine.push(out);
      }
      outs = mine;
    } else outs = this.parts.fanout.translateBatch(this.sel, events);
    if (outs.length) this.sendAll(outs, this.only ? 1 : audience);
  };

  /**
   * The stream runs: periodic BOOKMARKs when `bookmarks`, the periodic re-check (`recheck`
   * resolves to the scope now allowed, or rejects with Forbidden when none is, Unauthenticated when the caller's credentials no
   * longer hold), and the end after
   * `timeoutSeconds` (0 or absent: none). Returns the stop function.
   */
  run(recheck: () => Promise<WatchScope>, opts: { bookmarks?: boolean; timeoutSeconds?: number } = {}): () => void {
    if (this.ended) return this.stop;
    const { bookmarkMs, recheckMs } = this.parts.settings;
    const { model } = this.sel.entry;
    if (opts.bookmarks) {
      const bookmark = setInterval(() => {
        if (this.ended) return;
        if (this.grouped) this.position = later(this.position, this.selGate.position);
        if (this.position !== '') this.sink.send(bookmarkEvent(model, this.position));
      }, bookmarkMs);
      bookmark.unref();
      this.timers.push(bookmark);
    }
    if (opts.timeoutSeconds) {
      const timeout = setTimeout(() => {
        if (this.ended) return;
        this.stop();
        this.sink.end();
      }, opts.timeoutSeconds * 1000);
      timeout.unref();
      this.timers.push(timeout);
    }
    const again = setInterval(() => {
      recheck().then(
        (names) => {
          this.only = names;
        },
        (e: unknown) => {
          if (e instanceof Forbidden || e instanceof Unauthenticated) this.fail(e);
        },
      );
    }, recheckMs);
    again.unref();
    this.timers.push(again);
    return this.stop;
  }
}
