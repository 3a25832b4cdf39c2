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
 * claimed before and released after (claims.ts). Each successful write is published to the
 * model's in-process ChangeFeed.
 */
import { randomBytes } from 'node:crypto';
import { MongoClient, type Collection, type Db } from 'mongodb';
import { atomicCas, markerCas, type Cas, type MarkerDoc } from './cas.js';
import { Claims, type ClaimDoc } from './claims.js';
import { collectionNames, fromDoc, toDoc, uniqueValues, type StoredDoc } from './document.js';
import { guard, isDuplicateKey } from './errors.js';
import { ensureCollection, MODELS_COLLECTION, syncModel, type ModelRecord } from './indexes.js';
import { toFilter, toSort } from './query.js';
import { ChangeFeed } from '../changefeed.js';
import { StoreError } from '../errors.js';
import type { ApiObject } from '../../registry/object.js';
import type {
  ChangeEvent,
  IndexBuildProgress,
  ModelStore,
  Store,
  StorageModel,
  StoreListResult,
  StoreQuery,
  Unsubscribe,
} from '../types.js';

export interface MongoStoreOptions {
  /** `mongodb://host:port/database`; the database comes from the path unless `database` is given. */
  url: string;
  database?: string;
  /** How long an operation waits for a reachable server before `Unavailable`. Default 5 s. */
  serverSelectionTimeoutMS?: number;
}

export async function createMongoStore(options: MongoStoreOptions): Promise<Store> {
  const client = new MongoClient(options.url, {
    serverSelectionTimeoutMS: options.serverSelectionTimeoutMS ?? 5000,
    ignoreUndefined: true,
  });
  // No eager connect: the driver connects on first use, so the gateway can start (and report
  // 503 on /healthz) while the database is down.
  return new MongoStore(client, client.db(options.database));
}

class MongoStore implements Store {
  readonly kind = 'mongodb';
  /** One feed per model key, shared by every ModelStore handed out for it. */
  private readonly feeds = new Map<string, ChangeFeed>();
  /** Whether the server is FerretDB (non-atomic conditional writes, see cas.ts); asked once. */
  private ferret?: Promise<boolean>;

  constructor(
    private readonly client: MongoClient,
    private readonly db: Db,
  ) {}

  async model(model: StorageModel, onProgress?: (p: IndexBuildProgress) => void): Promise<ModelStore> {
    const names = collectionNames(model.key);
    const objects = this.db.collection<StoredDoc>(names.objects);
    const claims = new Claims(this.db.collection<ClaimDoc>(names.claims), objects);
    const cas = await guard(async () => {
      const cas = (await this.isFerret()) ? markerCas(objects, this.db.collection<MarkerDoc>(names.claims)) : atomicCas;
      await ensureCollection(this.db, names.objects);
      await ensureCollection(this.db, names.claims);
      const models = this.db.collection<ModelRecord>(MODELS_COLLECTION);
      await syncModel({ objects, claims, models, cas }, model, onProgress);
      return cas;
    });
    let feed = this.feeds.get(model.key);
    if (!feed) this.feeds.set(model.key, (feed = new ChangeFeed()));
    return new MongoModelStore(model, objects, claims, cas, feed);
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
    await this.client.close();
  }
}

const newIncarnation = () => randomBytes(8).toString('hex');

class MongoModelStore implements ModelStore {
  constructor(
    readonly model: StorageModel,
    private readonly objects: Collection<StoredDoc>,
    private readonly claims: Claims,
    private readonly cas: Cas,
    private readonly feed: ChangeFeed,
  ) {}

  get(name: string): Promise<ApiObject | null> {
    return guard(async () => {
      const doc = await this.objects.findOne({ _id: name }, { projection: { o: 1 } });
      return doc ? fromDoc(doc) : null;
    });
  }

  create(obj: ApiObject): Promise<ApiObject> {
    return guard(async () => {
      const doc = toDoc(this.model, obj, newIncarnation());
      const acquired = await this.claims.acquire(doc._id, doc.g, doc.v, uniqueValues(this.model, doc));
      try {
        await this.objects.insertOne(doc);
      } catch (e) {
        await this.claims.releaseAcquired(acquired);
        // `_id` is the only unique index of the object collection.
        if (isDuplicateKey(e)) throw new StoreError('AlreadyExists', `object "${doc._id}" already exists`);
        throw e;
      }
      return this.published('ADDED', doc);
    });
  }

  update(obj: ApiObject, expectedVersion: number): Promise<ApiObject> {
    return guard(async () => {
      const name = obj.metadata.name;
      const current = await this.objects.findOne({ _id: name }, { projection: { v: 1, g: 1, i: 1 } });
      if (!current) throw notFound(name);
      if (current.v !== expectedVersion) throw conflict(name, expectedVersion);

      const doc = toDoc(this.model, obj, current.g);
      const acquired = await this.claims.acquire(name, doc.g, doc.v, uniqueValues(this.model, doc));
      // Compare-and-set: replaces only the version we read (and the same incarnation).
      const { _id, ...replacement } = doc;
      let replaced: true | null;
      try {
        replaced = await this.cas.run(name, current.g, expectedVersion, async (filter) =>
          (await this.objects.replaceOne(filter, replacement)).matchedCount ? true : null,
        );
      } catch (e) {
        await this.claims.releaseAcquired(acquired);
        throw e;
      }
      if (!replaced) {
        await this.claims.releaseAcquired(acquired);
        const now = await this.objects.findOne({ _id: name }, { projection: { _id: 1 } });
        throw now ? conflict(name, expectedVersion) : notFound(name);
      }
      // The replaced document is the one read above: release the unique values it dropped.
      const kept = new Set(uniqueValues(this.model, doc).map((u) => `${u.index}\n${u.value}`));
      const dropped = uniqueValues(this.model, current).filter((u) => !kept.has(`${u.index}\n${u.value}`));
      await this.claims.release(name, doc.g, doc.v, dropped);
      return this.published('MODIFIED', doc);
    });
  }

  remove(name: string, expectedVersion: number): Promise<void> {
    return guard(async () => {
      const current = await this.objects.findOne({ _id: name }, { projection: { v: 1, g: 1 } });
      if (!current) throw notFound(name);
      if (current.v !== expectedVersion) throw conflict(name, expectedVersion);
      const doc = await this.cas.run(name, current.g, expectedVersion, (filter) => this.objects.findOneAndDelete(filter));
      if (!doc) {
        const now = await this.objects.findOne({ _id: name }, { projection: { _id: 1 } });
        throw now ? conflict(name, expectedVersion) : notFound(name);
      }
      await this.claims.release(name, doc.g, undefined, uniqueValues(this.model, doc));
      this.published('DELETED', doc);
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

  async resourceVersion(): Promise<string> {
    return this.feed.current();
  }

  watch(fromResourceVersion: string | undefined, onEvent: (e: ChangeEvent) => void): Unsubscribe {
    return this.feed.subscribe(fromResourceVersion, onEvent);
  }

  /** Publishes a committed write; the caller and the feed each get their own copy. */
  private published(type: ChangeEvent['type'], doc: Pick<StoredDoc, 'o'>): ApiObject {
    this.feed.publish(type, fromDoc(doc));
    return fromDoc(doc);
  }
}

const notFound = (name: string) => new StoreError('NotFound', `object "${name}" not found`);
const conflict = (name: string, expected: number) =>
  new StoreError('Conflict', `object "${name}" is not at version ${expected}`);
