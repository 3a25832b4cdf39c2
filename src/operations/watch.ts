/**
 * Watch: a stream of ADDED / MODIFIED / DELETED / BOOKMARK / ERROR events for the objects that
 * match the selectors, served from the model's durable change feed (store/feed).
 *
 * Two steps, so transports can refuse a request before accepting a connection:
 *  - `prepareWatch` authorizes `watch`, parses the selectors (400) — nothing is subscribed yet;
 *  - `PreparedWatch.start(sink)` subscribes and streams until stopped or ended.
 *
 * Semantics:
 *  - Selectors apply to the object before and after each change (events carry both): leaving the
 *    selection is DELETED, entering it is ADDED, also for changes replayed on resume.
 *  - Without `resourceVersion`: ADDED for every current match, then every change after the
 *    list's position; changes the list already reflected are not repeated.
 *  - With it: only changes after it; an expired or unknown position ends with ERROR 410, a
 *    value that is not a position at all is refused by `prepareWatch` (400).
 *  - BOOKMARK every `bookmarkMs` with the latest position; the `watch` right is checked again
 *    every `recheckMs` (revoked → ERROR 403 and the end); a model that stops being served ends
 *    its streams with ERROR 410 (registry/open-watches.ts).
 *  - A watch denied on the collection but granted on named objects (`resourceNames`, the
 *    decision's `names`) opens restricted to them: events of other objects are never sent.
 *    The re-check updates that set.
 *  - Objects leave through the kind's presentation hook (`present`, e.g. no password hashes).
 *
 * Fan-out cost: what a change means for a selector is decided once per
 * (change, model entry, selector) and shared by every watcher of that selector, and watchers past
 * their list reconciliation join their selector's group in the model's shared feed (FeedGate),
 * so a change their selector sees neither before nor after does not visit them at all; the
 * group's members get each read of the feed as one batch, translated once for all of them
 * (`translateBatch`) and handed to `sink.sendBatch`. What stays per watcher: the resourceNames
 * restriction, the `known` reconciliation, the re-check, the sink.
 */
import { ApiError, BadRequest, Forbidden, Gone, toApiError, Unavailable } from '../errors/index.js';
import { matchesWhere } from '../query/plan.js';
import { denial, liveAuthorizer } from '../security/authorizer.js';
import type { ApiObject } from '../store/object.js';
import { parsePosition } from '../store/feed/index.js';
import type { ChangeEvent, FeedGate, WatchHints } from '../store/types.js';
import { attributesFor, present, storeFailure } from './common.js';
import { planList, runList } from './list.js';
import type { ModelEntry, OperationContext, WatchEvent, WatchOptions } from './types.js';
import { trackWatch } from '../registry/open-watches.js';
import { watchSettings } from './watch-settings.js';

/** Where a started watch delivers. `end` is called once, after the last event. */
export interface WatchSink {
  send(e: WatchEvent): void;
  /**
   * Several events at once, in order (optional; otherwise `send` each). Watchers of one
   * selector receive the same array for the same changes: a transport may encode it once.
   * `audience`: about how many watchers receive this same array.
   */
  sendBatch?(events: readonly WatchEvent[], audience: number): void;
  /** The stream ended on the server's side (after an ERROR event, when there is one). */
  end(): void;
}

export interface PreparedWatch {
  /**
   * Subscribes and starts streaming into `sink`. Resolves to a stop function once the stream
   * runs (the initial ADDED events already handed to the sink). Errors after this point arrive
   * as an ERROR event followed by `sink.end()`.
   */
  start(sink: WatchSink): Promise<() => void>;
  /** Gives up a prepared watch that will never start (e.g. the WebSocket handshake failed). */
  close(): void;
}

export const errorEvent = (err: ApiError): WatchEvent => ({
  type: 'ERROR',
  object: { code: err.status, message: err.detail },
  resourceVersion: '',
});

/** JSON text of an event, computed once per event object however many watchers send it. */
const encoded = new WeakMap<WatchEvent, string>();
export function encodeWatchEvent(e: WatchEvent): string {
  let s = encoded.get(e);
  if (s === undefined) encoded.set(e, (s = JSON.stringify(e)));
  return s;
}

/**
 * UTF-8 bytes of an event's JSON text, computed once per event object: every WebSocket that
 * sends it gets the same Buffer (ws would otherwise encode a string once per socket).
 */
const encodedBytes = new WeakMap<WatchEvent, Buffer>();
export function encodeWatchEventBytes(e: WatchEvent): Buffer {
  let b = encodedBytes.get(e);
  if (b === undefined) encodedBytes.set(e, (b = Buffer.from(encodeWatchEvent(e))));
  return b;
}

/**
 * Translations of one change, shared by every watcher that translates it the same way, so that
 * the event object (and its JSON text, see encodeWatchEvent) exists once per change.
 */
const translations = new WeakMap<ChangeEvent, Map<string, WatchEvent>>();
function shared(entry: ModelEntry, change: ChangeEvent, type: WatchEvent['type'], object: ApiObject): WatchEvent {
  let m = translations.get(change);
  if (!m) translations.set(change, (m = new Map()));
  const key = `${type}:${object === change.object ? 'o' : 'p'}`;
  let e = m.get(key);
  if (!e) m.set(key, (e = { type, object: present(entry, object), resourceVersion: change.resourceVersion }));
  return e;
}

/**
 * Fan-out sharing: what a change means for a selector, decided once per (change, model entry,
 * selector) however many watchers use that selector; `null` = neither before nor after the
 * change matches. A watcher restricted to names (resourceNames) checks its names first and then
 * takes the shared answer (a change's object keeps its name, so the restriction applies
 * identically before and after).
 */
const selections = new WeakMap<ChangeEvent, Map<string, WatchEvent | null>>();
/** Index values of one object version, per compiled index (the same for every selector). */
const indexValues = new WeakMap<ApiObject, Map<object, readonly string[]>>();
const entryIds = new WeakMap<ModelEntry, number>();
let nextEntryId = 0;

function valuesOf(entry: ModelEntry, obj: ApiObject, index: string): readonly string[] {
  const idx = entry.model.index(index);
  if (!idx) return [];
  let m = indexValues.get(obj);
  if (!m) indexValues.set(obj, (m = new Map()));
  let v = m.get(idx);
  if (v === undefined) m.set(idx, (v = idx.values(obj)));
  return v;
}

/** A compiled selector of one model entry, with the key under which its translations are shared. */
interface Selection {
  entry: ModelEntry;
  where: ReturnType<typeof planList>['where'];
  key: string;
}

function selection(entry: ModelEntry, where: Selection['where']): Selection {
  let id = entryIds.get(entry);
  if (id === undefined) entryIds.set(entry, (id = nextEntryId++));
  return { entry, where, key: `${id}\u0000${JSON.stringify(where)}` };
}

const selects = (sel: Selection, obj: ApiObject) => matchesWhere(sel.where, (index) => valuesOf(sel.entry, obj, index));

let lastChange: ChangeEvent | undefined;
let lastKey = '';
let lastOut: WatchEvent | undefined;

/** The change as the selector sees it (before and after): ADDED, MODIFIED, DELETED or nothing. */
function translateFor(sel: Selection, e: ChangeEvent): WatchEvent | undefined {
  // The watchers of one selector ask in a row: answer them without the maps.
  if (e === lastChange && sel.key === lastKey) return lastOut;
  const out = translateShared(sel, e);
  lastChange = e;
  lastKey = sel.key;
  lastOut = out;
  return out;
}

/**
 * A batch of changes as the selector sees it, one array shared by every watcher of the
 * selector that receives this batch (a transport can then encode it once).
 */
const batchTranslations = new WeakMap<readonly ChangeEvent[], Map<string, readonly WatchEvent[]>>();
function translateBatch(sel: Selection, events: readonly ChangeEvent[]): readonly WatchEvent[] {
  let m = batchTranslations.get(events);
  if (!m) batchTranslations.set(events, (m = new Map()));
  let out = m.get(sel.key);
  if (out === undefined) {
    const list: WatchEvent[] = [];
    for (const e of events) {
      const w = translateFor(sel, e);
      if (w) list.push(w);
    }
    m.set(sel.key, (out = list));
  }
  return out;
}

function translateShared(sel: Selection, e: ChangeEvent): WatchEvent | undefined {
  let m = selections.get(e);
  if (!m) selections.set(e, (m = new Map()));
  let out = m.get(sel.key);
  if (out === undefined) {
    const was = e.type === 'DELETED' ? selects(sel, e.object) : e.previous !== undefined && selects(sel, e.previous);
    const is = e.type !== 'DELETED' && selects(sel, e.object);
    out = is ? shared(sel.entry, e, was ? 'MODIFIED' : 'ADDED', e.object) : was ? shared(sel.entry, e, 'DELETED', e.object) : null;
    m.set(sel.key, out);
  }
  return out ?? undefined;
}

/**
 * The feed gate of a selector (store/feed FeedGate), one object for all its watchers: a change
 * neither side of which the selector matches is not handed to them at all. It also records the
 * latest position the feed tested, which is every such watcher's latest position for BOOKMARK.
 */
interface SelectorGate extends FeedGate {
  position: string;
  refs: number;
}
const gates = new Map<string, SelectorGate>();

function joinGate(sel: Selection): SelectorGate {
  let g = gates.get(sel.key);
  if (!g) {
    const gate: SelectorGate = {
      key: sel.key,
      position: '',
      refs: 0,
      pass(e) {
        gate.position = e.resourceVersion;
        return translateFor(sel, e) !== undefined;
      },
    };
    gates.set(sel.key, (g = gate));
  }
  g.refs++;
  return g;
}

function leaveGate(g: SelectorGate): void {
  if (--g.refs <= 0 && gates.get(g.key) === g) gates.delete(g.key);
}

const later = (a: string, b: string) => (a === '' ? b : b === '' ? a : BigInt(a) >= BigInt(b) ? a : b);

/** Names the caller may watch: undefined = all; otherwise only these (a resourceNames grant). */
type Allowed = ReadonlySet<string> | undefined;

/** Authorizes `watch` on the collection; throws Forbidden unless some objects may be watched. */
async function authorizeWatch(ctx: OperationContext, entry: ModelEntry, live = false): Promise<Allowed> {
  const attrs = attributesFor(ctx, entry, 'watch');
  const decision = await (live ? liveAuthorizer(ctx.authorizer) : ctx.authorizer).authorize(attrs);
  if (decision.allowed) return undefined;
  if (decision.names?.size) return decision.names;
  throw denial(attrs);
}

export async function prepareWatch(ctx: OperationContext, entry: ModelEntry, opts: WatchOptions): Promise<PreparedWatch> {
  const only = await authorizeWatch(ctx, entry);
  // Validates selectors against the indexes exactly as list does (400 on bad input).
  const query = planList(entry, { labelSelector: opts.labelSelector, fieldSelector: opts.fieldSelector });
  checkResumePoint(opts.resourceVersion);
  return { start: (sink) => startWatch(ctx, entry, opts, query, only, sink), close: () => undefined };
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

/** prepareWatch + start in one call, for callers that have nothing to accept in between. */
export async function watchObjects(
  ctx: OperationContext,
  entry: ModelEntry,
  opts: WatchOptions,
  onEvent: (e: WatchEvent) => void,
  onEnd: () => void = () => undefined,
): Promise<() => void> {
  const prepared = await prepareWatch(ctx, entry, opts);
  return prepared.start({ send: onEvent, end: onEnd });
}

async function startWatch(
  ctx: OperationContext,
  entry: ModelEntry,
  opts: WatchOptions,
  query: ReturnType<typeof planList>,
  allowed: Allowed,
  sink: WatchSink,
): Promise<() => void> {
  const { model, store } = entry;
  let only = allowed;
  const sel = selection(entry, query.where);

  let ended = false;
  let unsubscribe: (() => void) | undefined;
  const timers: NodeJS.Timeout[] = [];
  let untrack = () => {};
  const selGate = joinGate(sel);
  /** In the feed's group of this selector: the changes the gate refused moved it on too. */
  let grouped = false;
  const gate: FeedGate = { key: selGate.key, pass: selGate.pass, joined: () => void (grouped = true) };
  const stop = () => {
    if (ended) return;
    ended = true;
    for (const t of timers) clearInterval(t);
    untrack();
    unsubscribe?.();
    unsubscribe = undefined;
    leaveGate(selGate);
  };
  const fail = (err: ApiError) => {
    if (ended) return;
    stop();
    sink.send(errorEvent(err));
    sink.end();
  };

  /** Latest position seen (every change, matching or not), for bookmarks. */
  let position = '';
  /**
   * Only while replaying the changes that may overlap the initial list (up to `windowEnd`):
   * the version of each object the client knows, to drop changes the list already showed.
   */
  let known: Map<string, { version: number; created: string | undefined }> | undefined;
  let windowEnd = 0n;

  const translate = (e: ChangeEvent): WatchEvent | undefined =>
    only && !only.has(e.object.metadata.name) ? undefined : translateFor(sel, e);

  /** Reconciles a translated change with what the initial list already told the client. */
  const reconcile = (e: ChangeEvent, out: WatchEvent | undefined): WatchEvent | undefined => {
    const k = known!;
    const n = e.object.metadata.name;
    const have = k.get(n);
    const same = have !== undefined && have.created === e.object.metadata.creationTimestamp;
    if (e.type !== 'DELETED' && same && (e.object.metadata.version ?? 0) <= have.version) return undefined;
    if (!out) {
      // Not visible after this change; if the client holds an older state, it must go.
      if (!have) return undefined;
      k.delete(n);
      return shared(entry, e, 'DELETED', e.object);
    }
    if (out.type === 'DELETED') {
      if (!have) return undefined; // the client never saw it
      k.delete(n);
      return out;
    }
    k.set(n, { version: e.object.metadata.version ?? 0, created: e.object.metadata.creationTimestamp });
    if (out.type === 'MODIFIED' && !have) return shared(entry, e, 'ADDED', e.object);
    if (out.type === 'ADDED' && have) return shared(entry, e, 'MODIFIED', e.object);
    return out;
  };

  /** Set once nothing but the selector decides which changes this watcher ignores. */
  let gated = false;
  const onChange = (e: ChangeEvent) => {
    if (ended) return;
    position = e.resourceVersion;
    let out = translate(e);
    if (known) {
      if (BigInt(e.resourceVersion) > windowEnd) {
        known = undefined;
        gated = true;
      } else out = reconcile(e, out);
    }
    if (out) sink.send(out);
  };
  const sendAll = sink.sendBatch
    ? (events: readonly WatchEvent[], audience: number) => sink.sendBatch!(events, audience)
    : (events: readonly WatchEvent[]) => {
        for (const e of events) if (!ended) sink.send(e);
      };
  /** A read of the feed, for this watcher as a member of its selector's group. */
  const onBatch = (events: readonly ChangeEvent[], audience: number) => {
    if (ended || !events.length) return;
    position = events[events.length - 1]!.resourceVersion;
    let outs: readonly WatchEvent[];
    if (only) {
      const mine: WatchEvent[] = [];
      for (const e of events) {
        const out = translate(e);
        if (out) mine.push(out);
      }
      outs = mine;
    } else outs = translateBatch(sel, events);
    if (outs.length) sendAll(outs, only ? 1 : audience);
  };
  const hints: WatchHints = { gate: () => (gated ? gate : undefined), onBatch };

  untrack = trackWatch(model.storage.key, {
    end: (code, message) => fail(code === 410 ? new Gone(message) : new Unavailable(message)),
    owner: entry.store,
  });

  try {
    if (opts.resourceVersion !== undefined && opts.resourceVersion !== '') {
      position = opts.resourceVersion;
      gated = true;
      unsubscribe = await store.watch(opts.resourceVersion, onChange, (err) => fail(lost(entry, err)), hints);
    } else {
      // List, announce every match as ADDED, then follow the feed from the list's position.
      const initial = await runList(entry, { ...query, offset: 0, limit: undefined });
      position = initial.resourceVersion;
      known = new Map();
      for (const obj of initial.items) {
        if (only && !only.has(obj.metadata.name)) continue;
        known.set(obj.metadata.name, { version: obj.metadata.version ?? 0, created: obj.metadata.creationTimestamp });
        if (!ended) sink.send({ type: 'ADDED', object: present(entry, obj), resourceVersion: initial.resourceVersion });
      }
      // Changes up to here may already be in the list: reconcile them against `known`. Not
      // `resourceVersion()`: that is the confirmed prefix of the feed, and on MongoDB the list
      // can already show a write whose feed entry is still pending beyond it (announcing that
      // change again when it is confirmed would repeat an ADDED/MODIFIED the list gave).
      windowEnd = BigInt(await store.horizon());
      if (ended) return stop;
      unsubscribe = await store.watch(initial.resourceVersion, onChange, (err) => fail(lost(entry, err)), hints);
    }
  } catch (e) {
    stop();
    try {
      storeFailure(entry, '', e);
    } catch (err) {
      throw toApiError(err);
    }
    throw toApiError(e);
  }
  if (ended) {
    unsubscribe();
    return stop;
  }

  const { bookmarkMs, recheckMs } = watchSettings;
  const bookmark = setInterval(() => {
    if (ended) return;
    if (grouped) position = later(position, selGate.position);
    if (position === '') return;
    const object = { apiVersion: model.apiVersion, kind: model.kind, metadata: {} } as unknown as ApiObject;
    sink.send({ type: 'BOOKMARK', object, resourceVersion: position });
  }, bookmarkMs);
  const recheck = setInterval(() => {
    authorizeWatch(ctx, entry, true).then(
      (names) => {
        only = names;
      },
      (e: unknown) => {
        if (e instanceof Forbidden) fail(e);
      },
    );
  }, recheckMs);
  bookmark.unref();
  recheck.unref();
  timers.push(bookmark, recheck);
  return stop;
}

function lost(entry: ModelEntry, err: Error): ApiError {
  try {
    storeFailure(entry, '', err);
  } catch (e) {
    return toApiError(e);
  }
}
