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
 */
import { randomBytes } from 'node:crypto';
import { MongoClient, type Collection, type Db } from 'mongodb';
import { bounded } from './bounded.js';
import { atomicCas, markerCas, type Cas, type MarkerDoc } from './cas.js';
import { Claims, type ClaimDoc } from './claims.js';
import { collectionNames, enc, fromDoc, toDoc, uniqueValues, type StoredDoc } from './document.js';
import { guard, isDuplicateKey } from './errors.js';
import { watchStalledWrites } from './stalled-writes.js';
import { ensureCollection, isNewer, MODELS_COLLECTION, readRecord, syncModel, type ModelRecord, type RecordedIndex } from './indexes.js';
import { valuesAtPath } from '../../registry/indexes.js';
import { toFilter, toSort } from './query.js';
import { retentionFromEnv, SharedFeed, type FeedRetention, type SharedFeedOptions } from '../feed/index.js';
import { StoreError } from '../errors.js';
import { FERRET_SEGMENT, FeedWriter, LEASE_STALE, MongoChangeLog, SEGMENT } from './feed.js';
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
  });
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
    this.writer = new FeedWriter(db);
    this.retention = options.retention ?? retentionFromEnv();
    this.stopRescue = watchStalledWrites(client);
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
    const claims = new Claims(this.db.collection<ClaimDoc>(names.claims), objects);
    const ferret = await retryUnavailable(() => guard(() => this.isFerret()));
    const cas = ferret ? markerCas(objects, this.db.collection<MarkerDoc>(names.claims)) : atomicCas;
    const f = this.feed(model.key, names.feed, objects);
    const segment = this.options.feedSegment ? BigInt(this.options.feedSegment) : ferret ? FERRET_SEGMENT : SEGMENT;
    await retryUnavailable(() => f.log.layout(segment));
    let route = this.routes.get(model.key);
    if (!route) this.routes.set(model.key, (route = { handles: new Set() }));
    // The request path gets time-bounded collections (see bounded.ts); the setup below does not.
    const ms = this.options.operationTimeoutMS;
    const bObjects = bounded(objects, ms);
    const bClaims = bounded(this.db.collection<ClaimDoc>(names.claims), ms);
    const bCas = cas === atomicCas ? cas : markerCas(bObjects, bounded(this.db.collection<MarkerDoc>(names.claims), ms));
    const models = this.db.collection<ModelRecord>(MODELS_COLLECTION);
    const next = new MongoModelStore(model, bObjects, new Claims(bClaims, bObjects), bCas, f.log, f.feed, route, bounded(models, ms));
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
      const feed = new SharedFeed(log, this.options.feed);
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
  const paths = foreign.flatMap((r) => {
    const p = /^path:([^|]+)/.exec(r.fingerprint)?.[1];
    return p ? [{ name: r.name, segs: p.split('.') }] : [];
  });
  return {
    ...model,
    indexes: [
      ...model.indexes.filter((d) => !names.has(d.name)),
      ...foreign.map((r) => ({ name: r.name, unique: r.unique, order: r.order ?? 'ASC', fingerprint: r.fingerprint })),
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

interface MongoRoute {
  write?: MongoModelStore;
  handles: Set<MongoModelStore>;
}

class MongoModelStore implements ModelStore {
  private inflight = 0;
  private idle: (() => void)[] = [];

  constructor(
    readonly model: StorageModel,
    private readonly objects: Collection<StoredDoc>,
    private readonly claims: Claims,
    private readonly cas: Cas,
    private readonly log: MongoChangeLog,
    private readonly feed: SharedFeed,
    private readonly route: MongoRoute,
    private readonly models: Collection<ModelRecord>,
  ) {}

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
          this.setForeign(
            recorded.filter((r) => {
              const d = this.model.indexes.find((x) => x.name === r.name);
              return (!d || d.fingerprint !== r.fingerprint || d.unique !== r.unique) && isNewer(r, this.model.version);
            }),
          ),
        )
        .finally(() => (this.refreshing = undefined));
      await this.refreshing;
    }
    this.eff ??= withForeign(this.model, this.foreign);
    return this.eff;
  }

  /** Names of the newer declaration's indexes this process has no code for. */
  private cannotCompute(): Set<string> {
    return new Set(this.foreign.filter((r) => !r.fingerprint.startsWith('path:')).map((r) => r.name));
  }

  /**
   * Keeps the stored values of indexes this handle cannot compute (see effective()), and flags
   * the object for the newer process to recompute them.
   */
  private carryOver(m: StorageModel, current: Pick<StoredDoc, 'i' | 's'>, doc: StoredDoc): void {
    const uncomputable = this.cannotCompute();
    if (uncomputable.size) doc.r = true;
    const computed = new Set(m.indexes.filter((d) => !uncomputable.has(d.name)).map((d) => enc(d.name)));
    for (const [k, values] of Object.entries(current.i ?? {})) {
      if (computed.has(k) || doc.i[k] !== undefined) continue;
      doc.i[k] = values;
      const sv = current.s?.[k];
      if (sv !== undefined) doc.s[k] = sv;
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
      const doc = await this.objects.findOne({ _id: name }, { projection: { o: 1 } });
      return doc ? fromDoc(doc) : null;
    });
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

  private doCreate(obj: ApiObject): Promise<ApiObject> {
    return guard(async () => {
      const g = newIncarnation();
      const m = await this.effective();
      const doc = toDoc(m, obj, g);
      if (this.cannotCompute().size) doc.r = true;
      // Unique values first: a create that loses a value never touches the feed.
      const acquired = await this.claims.acquire(doc._id, doc.g, doc.v, uniqueValues(m, doc));
      let f: string;
      try {
        f = await this.log.begin({ type: 'ADDED', name: obj.metadata.name, object: obj, pf: null, g });
      } catch (e) {
        await this.claims.releaseAcquired(acquired);
        throw e;
      }
      doc.f = f;
      try {
        this.leaseHeld();
        await this.objects.insertOne(doc);
      } catch (e) {
        // A retried insert (against a replica set member the driver retries once after a
        // network error) can find the document its first attempt wrote: same incarnation →
        // this create succeeded. Servers without retryable-write deduplication (FerretDB as a
        // replica set member) report that as a duplicate key.
        let mine = false;
        if (isDuplicateKey(e)) {
          try {
            mine = (await this.objects.findOne({ _id: doc._id }, { projection: { g: 1 } }))?.g === doc.g;
          } catch (lookup) {
            // Not known whether the first attempt wrote it: the feed settles that on its own.
            await this.log.failed(f, lookup);
            throw lookup;
          }
        }
        if (mine) {
          await this.log.finish(f, 'c');
          this.feed.wake();
          return fromDoc(doc);
        }
        // Claims stay while the write may still have happened (a stale claim is repaired later).
        if (await this.log.failed(f, e)) await this.claims.releaseAcquired(acquired);
        // `_id` is the only unique index of the object collection.
        if (isDuplicateKey(e)) throw new StoreError('AlreadyExists', `object "${doc._id}" already exists`);
        throw e;
      }
      await this.log.finish(f, 'c');
      this.feed.wake();
      return fromDoc(doc);
    });
  }

  private doUpdate(obj: ApiObject, expectedVersion: number): Promise<ApiObject> {
    return guard(async () => {
      const name = obj.metadata.name;
      const m = await this.effective();
      const current = await this.objects.findOne({ _id: name }, { projection: { v: 1, g: 1, i: 1, s: 1, o: 1, f: 1 } });
      if (!current) throw notFound(name);
      if (current.v !== expectedVersion) throw conflict(name, expectedVersion);

      const doc = toDoc(m, obj, current.g);
      this.carryOver(m, current, doc);
      // Unique values first: an update that loses a value never touches the feed.
      const acquired = await this.claims.acquire(name, doc.g, doc.v, uniqueValues(m, doc));
      let f: string;
      try {
        f = await this.log.begin({
          type: 'MODIFIED',
          name,
          object: obj,
          previous: fromDoc(current),
          pf: current.f ?? null,
          g: current.g,
        });
      } catch (e) {
        await this.claims.releaseAcquired(acquired);
        throw e;
      }
      doc.f = f;
      // Compare-and-set: replaces only the version we read (and the same incarnation).
      const { _id, ...replacement } = doc;
      let replaced: true | null;
      try {
        replaced = await this.cas.run(name, current.g, expectedVersion, async (filter) => {
          this.leaseHeld();
          return (await this.objects.replaceOne(filter, replacement)).matchedCount ? true : null;
        });
      } catch (e) {
        if (await this.log.failed(f, e)) await this.claims.releaseAcquired(acquired);
        throw e;
      }
      if (!replaced) {
        await this.log.finish(f, 'a');
        await this.claims.releaseAcquired(acquired);
        const now = await this.objects.findOne({ _id: name }, { projection: { _id: 1 } });
        throw now ? conflict(name, expectedVersion) : notFound(name);
      }
      // The replaced document is the one read above: release the unique values it dropped.
      const kept = new Set(uniqueValues(m, doc).map((u) => `${u.index}\n${u.value}`));
      const dropped = uniqueValues(m, current).filter((u) => !kept.has(`${u.index}\n${u.value}`));
      await this.log.finish(f, 'c');
      this.feed.wake();
      await this.claims.release(name, doc.g, doc.v, dropped);
      return fromDoc(doc);
    });
  }

  private doRemove(name: string, expectedVersion: number, final?: ApiObject): Promise<void> {
    return guard(async () => {
      const m = await this.effective();
      const current = await this.objects.findOne({ _id: name }, { projection: { v: 1, g: 1, o: 1, f: 1 } });
      if (!current) throw notFound(name);
      if (current.v !== expectedVersion) throw conflict(name, expectedVersion);
      const f = await this.log.begin({ type: 'DELETED', name, object: final ?? fromDoc(current), pf: current.f ?? null, g: current.g });
      let doc: StoredDoc | null;
      try {
        doc = await this.cas.run(name, current.g, expectedVersion, (filter) => {
          this.leaseHeld();
          return this.objects.findOneAndDelete(filter);
        });
      } catch (e) {
        await this.log.failed(f, e);
        throw e;
      }
      if (!doc) {
        await this.log.finish(f, 'a');
        const now = await this.objects.findOne({ _id: name }, { projection: { _id: 1 } });
        throw now ? conflict(name, expectedVersion) : notFound(name);
      }
      await this.log.finish(f, 'c');
      this.feed.wake();
      await this.claims.release(name, doc.g, undefined, uniqueValues(m, doc));
    });
  }

  list(query: StoreQuery): Promise<StoreListResult> {
    return guard(async () => {
      const filter = toFilter(query.where);
      const count = this.objects.countDocuments(filter);
      if (query.limit === 0) return { items: [], total: await count };
      const cursor = this.objects.find(filter, { projection: { o: 1 } }).sort(toSort(query.sort));
      if (query.offset > 0) cursor.skip(query.offset);
      if (query.limit !== undefined) cursor.limit(query.limit);
      const [docs, total] = await Promise.all([cursor.toArray(), count]);
      return { items: docs.map(fromDoc), total };
    });
  }

  resourceVersion(): Promise<string> {
    return guard(() => this.feed.resourceVersion());
  }

  horizon(): Promise<string> {
    return guard(() => this.feed.horizon());
  }

  watch(from: string | undefined, onEvent: (e: ChangeEvent) => void, onLost?: OnFeedLost, hints?: WatchHints): Promise<Unsubscribe> {
    return guard(() => this.feed.subscribe(from, onEvent, onLost, hints));
  }

  /** Step 2 of the feed protocol: never write an object while this process's lease is stale. */
  private leaseHeld(): void {
    if (!this.log.mayWrite()) throw new StoreError('Unavailable', LEASE_STALE);
  }
}

const notFound = (name: string) => new StoreError('NotFound', `object "${name}" not found`);
const conflict = (name: string, expected: number) =>
  new StoreError('Conflict', `object "${name}" is not at version ${expected}`);
