/**
 * MongoDB store adapter (also runs on FerretDB 1.24, which the tests use).
 *
 * Layout per model (document.ts, indexes.ts, claims.ts):
 *   ext.<group|core>.<version>.<plural>      the objects, one document each, `_id` = name
 *   claims.<group|core>.<version>.<plural>   one document per value taken in a unique index
 *                                            (and, on FerretDB, per write in progress: cas.ts)
 *   _svc_models                              index fingerprints per model
 *
 * Writes are single-document operations: create = insertOne, update = replaceOne and
 * remove = findOneAndDelete, both compare-and-set on the version (cas.ts); unique values are
 * claimed before and released after (claims.ts). Every write is recorded in the model's durable
 * change feed in the database by the pending-entry protocol of feed.ts (pending entry → object
 * write → confirm), and watchers read that feed through the shared feed layer (store/feed/).
 * One write goes through those steps as one object (write.ts), so create, update and remove
 * below are straight lines; it alone undoes what a failed write holds.
 */
import { randomBytes } from 'node:crypto';
import { MongoClient, type Collection, type CommandStartedEvent, type Db } from 'mongodb';
import { bounded, TimeBounds } from './bounded.js';
import { atomicCas, markerCas, type MarkerDoc } from './cas.js';
import { onceWrites } from './once.js';
import { Claims, type ClaimDoc } from './claims.js';
import { collectionNames, enc, fromDoc, toDoc, uniqueValues, type StoredDoc, type SvcFields } from './document.js';
import { guard } from './errors.js';
import { conflict, notFound, ObjectWrite, type WritePath } from './write.js';
import { watchStalledWrites } from './stalled-writes.js';
import { ensureCollection, foreignIndexes, MODELS_COLLECTION, readRecord, syncModel, type ModelRecord, type RecordedIndex } from './indexes.js';
import { nativeFields, numericFields, runList, runPage, toFilter, type NativeFields } from './query.js';
import { canonicalWhere, numericIndexes } from '../numeric.js';
import { valuesAtPath } from '../../json/values.js';
import { retentionFromEnv, SharedFeed, type FeedRetention, type SharedFeedOptions } from '../feed/index.js';
import { StoreError } from '../errors.js';
import { FEED_META, FERRET_SEGMENT, FeedWriter, MongoChangeLog, SEGMENT } from './feed.js';
import type { ApiObject } from '../object.js';
import type {
  ChangeEvent,
  IndexBuildProgress,
  ModelStore,
  OnFeedLost,
  Store,
  StorageModel,
  StoreListResult,
  StoreQuery,
  KeysetPage,
  KeysetQuery,
  IndexRequirement,
  Unsubscribe,
  WatchHints,
} from '../types.js';

export interface MongoStoreOptions {
  /** `mongodb://host:port/database`; the database comes from the path unless `database` is given. */
  url: string;
  database?: string;
  /** How long an operation waits for a reachable server before `Unavailable`. Default 5 s. */
  serverSelectionTimeoutMS?: number;
  /** Change-feed history kept per model (default: SVC_FEED_RETENTION_* or 100,000 events / 24 h). */
  retention?: FeedRetention;
  /** Change-feed polling; other processes' writes are seen within pollMs (default 50 ms). */
  feed?: SharedFeedOptions;
  /** Positions per feed segment of a new feed (default 1,024; 64 on FerretDB); small values are for tests. */
  feedSegment?: number;
  /**
   * Time bound of each driver operation of a request (reads, writes, claims, feed entries), so
   * one the store deadline gave up on is cancelled and frees its connection (bounded.ts). The
   * gateway passes its store deadline. Index builds and feed polling are not bounded.
   */
  operationTimeoutMS?: number;
  /**
   * Called with every command the driver starts (the driver's command monitoring). Off unless
   * given: tests and benches count the commands each request sends with it.
   */
  onCommand?: (e: CommandStartedEvent) => void;
}

export async function createMongoStore(options: MongoStoreOptions): Promise<Store> {
  const client = new MongoClient(options.url, {
    serverSelectionTimeoutMS: options.serverSelectionTimeoutMS ?? 5000,
    // A stopped (not closed) server leaves sockets open: give up on a silent socket so its
    // connection is replaced, and notice a returning server quickly. The per-operation
    // deadline (store/deadline.ts) answers the client long before these.
    connectTimeoutMS: 5000,
    socketTimeoutMS: 30_000,
    heartbeatFrequencyMS: 2000,
    ignoreUndefined: true,
    monitorCommands: options.onCommand !== undefined,
  });
  if (options.onCommand) client.on('commandStarted', options.onCommand);
  // No eager connect: the driver connects on first use, so the gateway can start (and report
  // 503 on /healthz) while the database is down.
  return new MongoStore(client, client.db(options.database), options);
}

class MongoStore implements Store {
  readonly kind = 'mongodb';
  /** One feed per model key, shared by every ModelStore handed out for it. */
  private readonly feeds = new Map<string, { log: MongoChangeLog; feed: SharedFeed }>();
  /** Per model key: the handle that serves writes, and every handle handed out. */
  private readonly routes = new Map<string, MongoRoute>();
  private readonly writer: FeedWriter;
  /** The abort signals of this store's driver operations (bounded.ts). */
  private readonly bounds = new TimeBounds();
  private readonly retention: FeedRetention;
  /** Whether the server is FerretDB (non-atomic conditional writes, see cas.ts); asked once. */
  private ferret?: Promise<boolean>;
  /** Stops the rescue of writes the driver would wait on forever (stalled-writes.ts). */
  private readonly stopRescue: () => void;

  constructor(
    private readonly client: MongoClient,
    private readonly db: Db,
    private readonly options: MongoStoreOptions,
  ) {
    this.writer = new FeedWriter(db, this.bounds);
    this.writer.busy = () => [...this.feeds.values()].some((f) => f.log.doubting);
    this.retention = options.retention ?? retentionFromEnv();
    this.stopRescue = watchStalledWrites(client);
    this.hintTimer = setInterval(() => void this.pollHints(), HINT_POLL_MS);
    this.hintTimer.unref();
  }

  private readonly hintTimer: NodeJS.Timeout;
  private hintBusy = false;

  /**
   * Change hints: one query every HINT_POLL_MS, for every watched model of this process
   * together, reads the models' head hints (`head:<key>` in `_svc_feed`, moved by every
   * process that writes); a feed whose hint is beyond what it has read is woken. The feeds
   * themselves poll only while they have something to read (a write in progress ahead of
   * them) and otherwise every IDLE_POLL_MS, so an idle gateway sends a few commands a second
   * however many models and watchers it serves, and another process's write reaches watchers
   * within about HINT_MS + HINT_POLL_MS (feed.ts). Nobody watching: no query.
   */
  private async pollHints(): Promise<void> {
    if (this.hintBusy) return;
    const watched = [...this.feeds].filter(([, f]) => f.feed.size > 0);
    if (!watched.length) return;
    this.hintBusy = true;
    try {
      const heads = await this.db
        .collection<{ _id: string; n?: number }>(FEED_META)
        .find({ _id: { $in: watched.map(([key]) => `head:${key}`) } }, this.bounds.within(HINT_POLL_MS * 8))
        .toArray();
      const n = new Map(heads.map((h) => [h._id, h.n]));
      for (const [key, f] of watched) {
        const head = n.get(`head:${key}`);
        if (head && f.log.noteHint(BigInt(head))) f.feed.wake();
      }
    } catch {
      // unreachable: the next tick asks again (and the feeds' own polls go on)
    } finally {
      this.hintBusy = false;
    }
  }

  /**
   * Every write through any handle of this model goes through the new handle from the start
   * of the sync (after in-flight writes of older handles have finished), so it carries the new
   * index values and unique claims: the rebuild pass skips objects written meanwhile (its
   * updates are conditional on the version), and those writes are already complete.
   */
  async model(model: StorageModel, onProgress?: (p: IndexBuildProgress) => void): Promise<ModelStore> {
    const names = collectionNames(model.key);
    const objects = this.db.collection<StoredDoc>(names.objects);
    const writers = { id: this.writer.id, gone: (w: string) => this.writer.gone(w) };
    const claims = new Claims(this.db.collection<ClaimDoc>(names.claims), objects, writers);
    const ferret = await retryUnavailable(() => guard(() => this.isFerret()));
    const cas = ferret ? markerCas(objects, this.db.collection<MarkerDoc>(names.claims), writers, onceWrites(this.db, names.objects, undefined, this.bounds)) : atomicCas;
    const f = this.feed(model.key, names.feed, objects);
    const segment = this.options.feedSegment ? BigInt(this.options.feedSegment) : ferret ? FERRET_SEGMENT : SEGMENT;
    await retryUnavailable(() => f.log.layout(segment));
    let route = this.routes.get(model.key);
    if (!route) this.routes.set(model.key, (route = { handles: new Set(), recent: new Map() }));
    // The request path gets time-bounded collections (see bounded.ts); the setup below does not.
    const ms = this.options.operationTimeoutMS;
    const bObjects = bounded(objects, ms, this.bounds);
    const bClaims = bounded(this.db.collection<ClaimDoc>(names.claims), ms, this.bounds);
    // FerretDB: the object writes of the request path go out as plain commands (once.ts).
    const once = ferret ? onceWrites(this.db, names.objects, ms, this.bounds) : undefined;
    const bCas = once ? markerCas(bObjects, bounded(this.db.collection<MarkerDoc>(names.claims), ms, this.bounds), writers, once) : cas;
    const models = this.db.collection<ModelRecord>(MODELS_COLLECTION);
    const path = { objects: bObjects, claims: new Claims(bClaims, bObjects, writers), cas: bCas, log: f.log, feed: f.feed, once };
    const next = new MongoModelStore(model, path, route, bounded(models, ms));
    next.scans = ferret;
    const before = route.write;
    route.write = next;
    try {
      await Promise.all([...route.handles].map((h) => h.drained()));
      // Opening is idempotent; a dropped connection while several processes set up the same
      // model at once (seen on FerretDB) is retried rather than failing the start.
      await retryUnavailable(() =>
        guard(async () => {
          await ensureCollection(this.db, names.objects);
          await ensureCollection(this.db, names.claims);
          next.setForeign(await syncModel({ objects, claims, models, cas }, model, onProgress));
        }),
      );
    } catch (e) {
      if (route.write === next) route.write = before;
      throw e;
    }
    route.handles.add(next);
    return next;
  }

  private feed(key: string, feedName: string, objects: Collection<StoredDoc>): { log: MongoChangeLog; feed: SharedFeed } {
    let f = this.feeds.get(key);
    if (!f) {
      // Its segment size is settled by layout() in model().
      const log = new MongoChangeLog(this.db, key, feedName, objects, this.writer, this.retention, this.options.operationTimeoutMS);
      const feed = new SharedFeed(log, { idlePollMs: IDLE_POLL_MS, ...this.options.feed });
      log.onSettled = () => feed.wake();
      this.feeds.set(key, (f = { log, feed }));
    }
    return f;
  }

  private isFerret(): Promise<boolean> {
    this.ferret ??= this.db.command({ buildInfo: 1 }).then(
      (info) => typeof info.ferretdbVersion === 'string',
      (e: unknown) => {
        this.ferret = undefined; // ask again next time
        throw e;
      },
    );
    return this.ferret;
  }

  async ping(): Promise<void> {
    await guard(() => this.db.command({ ping: 1 }));
  }

  async close(): Promise<void> {
    clearInterval(this.hintTimer);
    for (const f of this.feeds.values()) {
      f.feed.close();
      f.log.close();
    }
    await this.writer.close();
    await this.client.close();
    this.stopRescue();
  }
}

const newIncarnation = () => randomBytes(8).toString('hex');

/**
 * Change hints are read this often while anyone watches (MongoStore.pollHints): 3.3 queries a
 * second, which leaves room under the idle budget of 5 commands a second for the lease renewal
 * (1 a second for LEASE_IDLE_MS after a write). At 250 ms the two made exactly 5 and timer
 * jitter could push an idle window over it; a change still reaches another gateway's watchers
 * within about HINT_MS + HINT_POLL_MS.
 */
const HINT_POLL_MS = 300;
/** A settled feed polls its log this often by itself (a safety net behind the hints). */
const IDLE_POLL_MS = 20_000;
/** How often a handle re-reads which indexes a newer declaration of its model made. */
const FOREIGN_REFRESH_MS = 2000;

/**
 * `model` with the indexes of a newer declaration in place of its own of the same name: a path
 * index computes its values from the path; an indexFunc one computes none (its stored values are
 * carried over by updates).
 */
function withForeign(model: StorageModel, foreign: RecordedIndex[]): StorageModel {
  if (!foreign.length) return model;
  const names = new Set(foreign.map((r) => r.name));
  const paths = foreign.flatMap((r) => (r.path ? [{ name: r.name, segs: r.path.split('.') }] : []));
  return {
    ...model,
    indexes: [
      ...model.indexes.filter((d) => !names.has(d.name)),
      ...foreign.map((r) => ({
        name: r.name,
        unique: r.unique,
        order: r.order ?? 'ASC',
        fingerprint: r.fingerprint,
        ...(r.path !== undefined && { path: r.path }),
        ...(r.numeric && { numeric: true }),
        ...(r.text && { text: true }),
      })),
    ],
    indexValues(obj) {
      const out = model.indexValues(obj);
      for (const n of names) delete out[n];
      for (const p of paths) out[p.name] = [...new Set(valuesAtPath(obj, p.segs))];
      return out;
    },
  };
}

async function retryUnavailable<T>(fn: () => Promise<T>, attempts = 4): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (e) {
      if (!(e instanceof StoreError && e.code === 'Unavailable') || i >= attempts) throw e;
      await new Promise((r) => setTimeout(r, 250 * i));
    }
  }
}

/** How a model's indexes are queried: native fields of text indexes, numeric indexes and their fields. */
interface Shape {
  native: NativeFields;
  numeric: ReadonlySet<string>;
  numbers: NativeFields;
}

interface MongoRoute {
  write?: MongoModelStore;
  handles: Set<MongoModelStore>;
  /**
   * Documents `get` read lately, by name: an update or delete of the version read (the
   * handler reads the object first: to patch it, to check it) needs no read of its own. A hint
   * only: the compare-and-set on (incarnation, version) decides, and a given (incarnation,
   * version) of an object is always the same document.
   */
  recent: Map<string, { doc: Recent; at: number }>;
}

type Recent = StoredDoc;
/** How long and how many documents `recent` keeps. */
const RECENT_MS = 10_000;
const RECENT_MAX = 2048;

class MongoModelStore implements ModelStore {
  /** The server scans for every filter (FerretDB): lists read page and total in one command (query.ts). */
  scans = false;
  private inflight = 0;
  private idle: (() => void)[] = [];

  /** What every write of this handle goes through (write.ts). */
  private readonly path: WritePath;
  private readonly objects: Collection<StoredDoc>;
  private readonly feed: SharedFeed;

  constructor(
    readonly model: StorageModel,
    path: WritePath,
    private readonly route: MongoRoute,
    private readonly models: Collection<ModelRecord>,
  ) {
    this.path = path;
    this.objects = path.objects;
    this.feed = path.feed;
  }

  /** Indexes of a newer declaration of this model (another process's plugin version). */
  private foreign: RecordedIndex[] = [];
  private foreignRead = 0;
  private refreshing?: Promise<void>;
  private eff?: StorageModel;

  /** After a sync: the newer declaration's indexes it kept. */
  setForeign(foreign: RecordedIndex[]): void {
    this.foreign = foreign;
    this.foreignRead = Date.now();
    this.eff = undefined;
  }

  /**
   * The model as this handle writes it: its own indexes, plus those a newer declaration made
   * (read from the model record, at most every FOREIGN_REFRESH_MS), so a write by an older
   * process keeps the newer indexes and their unique claims. A newer path index is computed
   * from its path; a newer indexFunc index (code this process doesn't have) keeps its stored
   * values (carryOver).
   */
  private async effective(): Promise<StorageModel> {
    if (this.model.version === undefined) return this.model;
    if (Date.now() - this.foreignRead > FOREIGN_REFRESH_MS) {
      // One read for every write that finds the information stale at the same time.
      this.refreshing ??= readRecord(this.models, this.model.key)
        .then((recorded) =>
          this.setForeign(foreignIndexes(this.model, recorded)),
        )
        .finally(() => (this.refreshing = undefined));
      await this.refreshing;
    }
    this.eff ??= withForeign(this.model, this.foreign);
    return this.eff;
  }

  /** Names of the newer declaration's indexes this process has no code for. */
  private cannotCompute(): Set<string> {
    return new Set(this.foreign.filter((r) => !r.path).map((r) => r.name));
  }

  /**
   * Keeps the stored values of indexes this handle cannot compute (see effective()), and flags
   * the object for the newer process to recompute them.
   */
  private carryOver(m: StorageModel, current: Pick<SvcFields, 'i' | 's'>, doc: StoredDoc): void {
    const uncomputable = this.cannotCompute();
    if (uncomputable.size) doc._svc.r = true;
    const computed = new Set(m.indexes.filter((d) => !uncomputable.has(d.name)).map((d) => enc(d.name)));
    for (const [k, values] of Object.entries(current.i ?? {})) {
      if (computed.has(k) || doc._svc.i[k] !== undefined) continue;
      doc._svc.i[k] = values;
      const sv = current.s?.[k];
      if (sv !== undefined) doc._svc.s[k] = sv;
    }
  }

  /** Resolves when no write of this handle is in progress. */
  drained(): Promise<void> {
    return this.inflight === 0 ? Promise.resolve() : new Promise((r) => this.idle.push(r));
  }

  /** Runs a write here, or on the handle that now serves this model's writes. */
  private async writing<T>(forward: (to: MongoModelStore) => Promise<T>, fn: () => Promise<T>): Promise<T> {
    const to = this.route.write;
    if (to && to !== this) return forward(to);
    this.inflight++;
    try {
      return await fn();
    } finally {
      if (--this.inflight === 0) for (const r of this.idle.splice(0)) r();
    }
  }

  get(name: string): Promise<ApiObject | null> {
    return guard(async () => {
      // The whole document: an update or delete of this version reuses it (MongoRoute.recent).
      const doc = await this.objects.findOne({ _id: name });
      if (!doc) return null;
      this.remember(doc);
      return fromDoc(doc);
    });
  }

  private remember(doc: Recent): void {
    const recent = this.route.recent;
    recent.delete(doc._id);
    recent.set(doc._id, { doc, at: Date.now() });
    if (recent.size > RECENT_MAX) recent.delete(recent.keys().next().value!);
  }

  /** The object as read lately at `version` (see MongoRoute.recent), else as read now. */
  private async current(name: string, version: number): Promise<Recent | null> {
    const r = this.route.recent.get(name);
    this.route.recent.delete(name); // once: a second write of that version is a conflict anyway
    // Values of indexes this handle cannot compute may have been rewritten since (a rebuild).
    if (r && r.doc._svc.v === version && Date.now() - r.at < RECENT_MS && !this.cannotCompute().size) return r.doc;
    return this.objects.findOne({ _id: name });
  }

  create(obj: ApiObject): Promise<ApiObject> {
    return this.writing((to) => to.create(obj), () => this.doCreate(obj));
  }

  update(obj: ApiObject, expectedVersion: number): Promise<ApiObject> {
    return this.writing((to) => to.update(obj, expectedVersion), () => this.doUpdate(obj, expectedVersion));
  }

  remove(name: string, expectedVersion: number, final?: ApiObject): Promise<void> {
    return this.writing((to) => to.remove(name, expectedVersion, final), () => this.doRemove(name, expectedVersion, final));
  }

  /** A write of object `name` (incarnation `g`) through the write protocol (write.ts). */
  private write(name: string, g: string): ObjectWrite {
    return new ObjectWrite(this.path, name, g);
  }

  private doCreate(obj: ApiObject): Promise<ApiObject> {
    return guard(async () => {
      const m = await this.effective();
      const doc = toDoc(m, obj, newIncarnation());
      if (this.cannotCompute().size) doc._svc.r = true;
      const w = this.write(doc._id, doc._svc.g);
      await w.claim(doc._svc.v, uniqueValues(m, doc._svc));
      doc._svc.f = await w.enter({ type: 'ADDED', object: obj, pf: null });
      await w.insert(doc);
      await w.commit();
      return fromDoc(doc);
    });
  }

  private doUpdate(obj: ApiObject, expectedVersion: number): Promise<ApiObject> {
    return guard(async () => {
      const m = await this.effective();
      const current = await this.read(obj.metadata.name, expectedVersion);
      const cur = current._svc;
      const doc = toDoc(m, obj, cur.g);
      this.carryOver(m, cur, doc);
      const unique = uniqueValues(m, doc._svc);
      const w = this.write(doc._id, cur.g);
      await w.claim(doc._svc.v, unique);
      doc._svc.f = await w.enter({ type: 'MODIFIED', object: obj, previous: fromDoc(current), pf: cur.f ?? null });
      await w.replace(expectedVersion, doc);
      // The replaced document is the one read above: release the unique values it dropped.
      const kept = new Set(unique.map((u) => `${u.index}\n${u.value}`));
      await w.commit({ version: doc._svc.v, values: uniqueValues(m, cur).filter((u) => !kept.has(`${u.index}\n${u.value}`)) });
      return fromDoc(doc);
    });
  }

  private doRemove(name: string, expectedVersion: number, final?: ApiObject): Promise<void> {
    return guard(async () => {
      const m = await this.effective();
      const current = await this.read(name, expectedVersion);
      const w = this.write(name, current._svc.g);
      await w.enter({ type: 'DELETED', object: final ?? fromDoc(current), pf: current._svc.f ?? null });
      const gone = await w.delete(expectedVersion);
      await w.commit({ version: undefined, values: uniqueValues(m, gone._svc) });
    });
  }

  /** The object a write of `expectedVersion` replaces: NotFound, or Conflict at another version. */
  private async read(name: string, expectedVersion: number): Promise<Recent> {
    const current = await this.current(name, expectedVersion);
    if (!current) throw notFound(name);
    if (current._svc.v !== expectedVersion) throw conflict(name, expectedVersion);
    return current;
  }

  list(query: StoreQuery): Promise<StoreListResult> {
    return guard(async () => {
      // As this handle writes the model: a newer declaration's index is queried as it made it.
      const m = await this.effective();
      const shape = this.shapeOf(m);
      return runList(this.objects, this.filterOf(query.where, shape), query, this.scans, shape.native);
    });
  }

  /** A keyset page (query.ts runPage): one find, limit + 1 documents. */
  page(query: KeysetQuery): Promise<KeysetPage> {
    return guard(async () => {
      const shape = this.shapeOf(await this.effective());
      return runPage(this.objects, this.filterOf(query.where, shape), query, shape.native);
    });
  }

  private shapeOf(m: StorageModel): Shape {
    let shape = this.shapes.get(m);
    if (!shape) this.shapes.set(m, (shape = { native: nativeFields(m.indexes), numeric: numericIndexes(m.indexes), numbers: numericFields(m.indexes) }));
    return shape;
  }

  private filterOf(where: IndexRequirement[], shape: Shape) {
    return toFilter(canonicalWhere(where, shape.numeric), shape.native, shape.numeric, shape.numbers);
  }

  /** Per model as written (effective()): the native fields of text indexes, the numeric indexes. */
  private readonly shapes = new WeakMap<StorageModel, Shape>();

  resourceVersion(): Promise<string> {
    return guard(() => this.feed.resourceVersion());
  }

  horizon(): Promise<string> {
    return guard(() => this.feed.horizon());
  }

  watch(from: string | undefined, onEvent: (e: ChangeEvent) => void, onLost?: OnFeedLost, hints?: WatchHints): Promise<Unsubscribe> {
    return guard(() => this.feed.subscribe(from, onEvent, onLost, hints));
  }
}
