/**
 * Physical indexes of a model's collection and (re)building of index values.
 *
 * A text index (one string field, no array on the way, not unique: document.ts nativePath) is
 * served by its native field, the way the database's own tools query it:
 *   `p:<index>`  { <real path, keys escaped>: dir, _id: 1 }   filter and sort, name as tie-break
 * Every other secondary IndexDescriptor becomes two MongoDB indexes the gateway's queries use:
 *   `f:<index>`  { _svc.i.<enc>: 1 }              filter (multikey: one entry per value)
 *   `s:<index>`  { _svc.s.<enc>: dir, _id: 1 }    sort on the smallest value, name as tie-break
 * where dir is the declared order, except metadata.creationTimestamp which is always -1 so the
 * default list order (creationTimestamp desc, name asc) has an exactly matching index.
 * Such an index, when it is a path index (IndexDescriptor.path) over spec/status/any top-level
 * field other than metadata, also gets `p:<index>` { <real path, keys escaped>: dir }, so
 * queries of the database's own tools on the native field (`find({'spec.age': {$gt: 30}})`)
 * use an index. metadata.creationTimestamp/deletionTimestamp get `p:` too (on the BSON dates).
 * An index that becomes a text index or stops being one (a new schema) is rebuilt like one whose
 * fingerprint changed (sameIndex): the `_svc` copies are removed or written, and reconcile()
 * swaps the physical indexes. The record keeps the flag (`text`).
 * `metadata.name` is `_id`. Unique indexes are enforced through claims (claims.ts).
 *
 * `_svc_models` remembers, per model, each index's fingerprint and unique flag. An index that is
 * new or whose fingerprint changed gets its values recomputed over the stored objects (a cursor,
 * bulkWrite per batch: never all objects in memory); removed indexes are dropped.
 */
import { randomBytes } from 'node:crypto';
import type { Collection, Db, IndexDescription } from 'mongodb';
import type { Cas, RebuildItem } from './cas.js';
import { isDuplicateKey } from './errors.js';
import { upgradeLayout } from './layout.js';
import type { Claims } from './claims.js';
import { CREATION_INDEX, enc, fromDoc, indexFields, nativePath, realPath, secondaryIndexes, SVC, uniqueValues, type StoredDoc } from './document.js';
import type { IndexBuildProgress, IndexDescriptor, StorageModel } from '../types.js';

export const MODELS_COLLECTION = '_svc_models';
export const BATCH_SIZE = 500;

/** One index as recorded: what it is and which declaration (plugin version) made it. */
export interface RecordedIndex {
  name: string;
  fingerprint: string;
  unique: boolean;
  order?: 'ASC' | 'DESC';
  /** IndexDescriptor.path, .numeric and .text (absent in records written before they existed). */
  path?: string;
  numeric?: boolean;
  text?: boolean;
  /** Version of the declaration that made it (absent: unknown / platform). */
  version?: string;
}

/** An array, not a map: index names contain `.`, which is not allowed in field names. */
export interface ModelRecord {
  _id: string;
  indexes: RecordedIndex[];
}

/**
 * Orders two plugin versions: numeric dot/dash-separated parts compare as numbers, others as
 * text (1.10.0 > 1.9.0, 2.0.0 > 2.0.0-rc1 is not attempted: a pre-release sorts after).
 */
export function compareVersions(a: string, b: string): number {
  const pa = a.split(/[.+-]/);
  const pb = b.split(/[.+-]/);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const x = pa[i] ?? '';
    const y = pb[i] ?? '';
    if (x === y) continue;
    if (/^\d+$/.test(x) && /^\d+$/.test(y)) return Number(x) - Number(y);
    return x < y ? -1 : 1;
  }
  return 0;
}

/**
 * Whether a declared index keeps the values recorded, held the same way: same fingerprint, and
 * served by its field or not alike (document.ts nativePath). If not, its values are rebuilt.
 */
const sameValues = (d: IndexDescriptor, r: RecordedIndex): boolean => d.fingerprint === r.fingerprint && !!nativePath(d) === !!nativePath(r);

/** Whether a declared index is the one recorded: the same values (sameValues) and uniqueness. */
const sameIndex = (d: IndexDescriptor, r: RecordedIndex): boolean => sameValues(d, r) && d.unique === r.unique;

/** Whether a recorded index was made by a newer declaration than `version`. */
export const isNewer = (r: RecordedIndex, version: string | undefined): boolean =>
  version !== undefined && r.version !== undefined && compareVersions(r.version, version) > 0;

/** The recorded indexes a newer declaration made that `model` lacks or defines differently. */
export const foreignIndexes = (model: StorageModel, recorded: RecordedIndex[]): RecordedIndex[] =>
  recorded.filter((r) => {
    const d = model.indexes.find((x) => x.name === r.name);
    return (!d || !sameIndex(d, r)) && isNewer(r, model.version);
  });

type Named = IndexDescription & { name: string };

/** The MongoDB indexes a model needs on its object collection (besides `_id_`). */
export function physicalIndexes(model: StorageModel, extra: Pick<IndexDescriptor, 'name' | 'order' | 'path' | 'unique' | 'text'>[] = []): Named[] {
  return [...secondaryIndexes(model), ...extra].flatMap((d) => {
    const dir = d.name === CREATION_INDEX || d.order === 'DESC' ? -1 : 1;
    // A text index is served by its native field alone: one index that filters and sorts.
    const native = nativePath(d);
    if (native) return [{ name: `p:${d.name}`, key: { [native]: dir, _id: 1 } }];
    const out: Named[] = [
      { name: `f:${d.name}`, key: { [`${SVC.i}.${enc(d.name)}`]: 1 } },
      { name: `s:${d.name}`, key: { [`${SVC.s}.${enc(d.name)}`]: dir, _id: 1 } },
    ];
    const real = realPath(d);
    if (real) out.push({ name: `p:${d.name}`, key: { [real]: dir } });
    return out;
  });
}

export async function ensureCollection(db: Db, name: string): Promise<void> {
  try {
    await db.createCollection(name);
  } catch (e) {
    if ((e as { code?: number }).code !== 48) throw e; // NamespaceExists
  }
}

/**
 * Creates missing indexes and drops ours (`f:`/`s:`/`p:`) that are gone or whose key changed.
 * Two gateways may reconcile one collection at once (both starting on a database to upgrade):
 * an index the other one dropped first is not an error, and when a create collides with the
 * other's (FerretDB answers "already exists" instead of MongoDB's no-op), the indexes are read
 * again and what is still missing is created again.
 */
async function reconcile(objects: Collection<StoredDoc>, wanted: Named[]): Promise<void> {
  const same = (a: { key: object }, b: { key: object }) => JSON.stringify(a.key) === JSON.stringify(b.key);
  for (let attempt = 1; ; attempt++) {
    const existing = await objects.indexes();
    const kept = new Set<string>();
    for (const ix of existing) {
      const name = ix.name ?? '';
      if (!/^[fsp]:/.test(name)) continue;
      const w = wanted.find((x) => x.name === name);
      if (w && same(w, ix)) kept.add(name);
      else await objects.dropIndex(name).catch((e: unknown) => {
        if ((e as { code?: number }).code !== 27) throw e; // IndexNotFound: dropped by the other one
      });
    }
    const missing = wanted.filter((w) => !kept.has(w.name));
    if (!missing.length) return;
    try {
      await objects.createIndexes(missing);
      return;
    } catch (e) {
      if (attempt >= 5) throw e;
      await new Promise((r) => setTimeout(r, 50 * attempt));
    }
  }
}

export interface SyncContext {
  objects: Collection<StoredDoc>;
  claims: Claims;
  models: Collection<ModelRecord>;
  cas: Cas;
}

/** How long a model's schema lease lasts unless renewed (a crashed holder's lease expires). */
export const LEASE_MS = 30_000;

/**
 * Runs `fn` while holding the model's schema lease: a document `#lease <key>` in `_svc_models`,
 * taken by inserting it (the insert of an `_id` is atomic on every backend), renewed every
 * LEASE_MS/3 while held, deleted afterwards, and taken over once expired. So two gateway
 * processes never change one model's indexes, claims or record at the same time.
 */
export async function withSchemaLease<T>(models: Collection<ModelRecord>, key: string, fn: () => Promise<T>): Promise<T> {
  const leases = models as unknown as Collection<{ _id: string; owner: string; until: Date }>;
  const id = `#lease ${key}`;
  const owner = randomBytes(8).toString('hex');
  for (;;) {
    try {
      await leases.insertOne({ _id: id, owner, until: new Date(Date.now() + LEASE_MS) });
      break;
    } catch (e) {
      if (!isDuplicateKey(e)) throw e;
    }
    const held = await leases.findOne({ _id: id });
    if (held && new Date(held.until).getTime() < Date.now()) {
      await leases.deleteOne({ _id: id, owner: held.owner }); // its holder died: take it over
      continue;
    }
    await new Promise((r) => setTimeout(r, 100 + Math.random() * 100));
  }
  const renew = setInterval(() => {
    leases.updateOne({ _id: id, owner }, { $set: { until: new Date(Date.now() + LEASE_MS) } }).catch(() => undefined);
  }, LEASE_MS / 3);
  renew.unref();
  try {
    return await fn();
  } finally {
    clearInterval(renew);
    // Released at once if at all possible (a lease left behind makes the next sync wait for it
    // to expire), e.g. after the connection dropped mid-sync.
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        await leases.deleteOne({ _id: id, owner });
        break;
      } catch {
        await new Promise((r) => setTimeout(r, 200 * (attempt + 1)));
      }
    }
  }
}

/**
 * Brings the collection's indexes and stored index values in line with `model`, under the
 * model's schema lease. Idempotent. Version check: an index recorded by a newer declaration
 * than `model.version` (another gateway process running a newer plugin version) is neither
 * dropped nor redefined: its physical indexes, values and claims stay, and it stays in the
 * record. Returns those indexes; the model's handles keep them up to date (index.ts).
 */
export async function syncModel(
  ctx: SyncContext,
  model: StorageModel,
  onProgress?: (p: IndexBuildProgress) => void,
): Promise<RecordedIndex[]> {
  return withSchemaLease(ctx.models, model.key, () => syncLocked(ctx, model, onProgress));
}

async function syncLocked(
  ctx: SyncContext,
  model: StorageModel,
  onProgress?: (p: IndexBuildProgress) => void,
): Promise<RecordedIndex[]> {
  const { objects, claims, models } = ctx;
  await upgradeLayout(objects, models as never, model.key);
  const stored: Record<string, RecordedIndex> = Object.fromEntries(
    ((await models.findOne({ _id: model.key }))?.indexes ?? []).map((r) => [r.name, r]),
  );
  // Indexes a newer declaration made that this one lacks or defines differently: kept as they are.
  const foreign = foreignIndexes(model, Object.values(stored));
  const foreignNames = new Set(foreign.map((r) => r.name));
  const current = secondaryIndexes(model).filter((d) => !foreignNames.has(d.name));
  await reconcile(
    objects,
    physicalIndexes(
      { ...model, indexes: current },
      foreign.map((r) => ({ name: r.name, order: r.order ?? 'ASC', path: r.path, unique: r.unique, text: r.text })),
    ),
  );

  // Values to (re)compute: new indexes, changed derivations, and a switch to or from being
  // served by the field (the copies under `_svc` go or come).
  const rebuild = current.filter((d) => !stored[d.name] || !sameValues(d, stored[d.name]!));
  // Unique indexes whose claims must be (re)made: values changed, or newly unique.
  const reclaim = current.filter((d) => d.unique && (rebuild.includes(d) || !stored[d.name]?.unique));

  // Forget what no longer applies: claims of indexes that are gone, no longer unique or rebuilt;
  // values of indexes that are gone.
  const gone: string[] = [];
  for (const [name, info] of Object.entries(stored)) {
    if (foreignNames.has(name)) continue;
    const d = current.find((x) => x.name === name);
    if (info.unique && (!d || !d.unique || reclaim.includes(d))) await claims.dropIndex(name);
    if (!d) gone.push(enc(name));
  }
  if (gone.length) await dropValues(ctx, gone);

  if (rebuild.length || reclaim.length) await rebuildValues(ctx, { ...model, indexes: current }, rebuild, reclaim, onProgress);
  if (!foreign.length) await repairFlagged(ctx, model);

  const record: RecordedIndex[] = [
    ...current.map((d) => ({
      name: d.name,
      fingerprint: d.fingerprint,
      unique: d.unique,
      order: d.order,
      ...(d.path !== undefined && { path: d.path }),
      ...(d.numeric && { numeric: true }),
      ...(d.text && { text: true }),
      ...(model.version !== undefined && { version: model.version }),
    })),
    ...foreign,
  ];
  await upsertRecord(models, model.key, record);
  return foreign;
}

/**
 * Recomputes every index of objects an older process flagged (`r`) because it lacked code for
 * some of them, under the compare-and-set writers use (a newer write has fresh values anyway).
 */
async function repairFlagged(ctx: SyncContext, model: StorageModel): Promise<void> {
  for (;;) {
    const batch = await ctx.objects.find({ [SVC.r]: true }, { projection: { [SVC.i]: 0, [SVC.s]: 0 } }).limit(BATCH_SIZE).toArray();
    if (!batch.length) return;
    const items = batch.map((doc) => {
      const { i, s } = indexFields(model, fromDoc(doc));
      return { name: doc._id, g: doc._svc.g, v: doc._svc.v, update: { $set: { [SVC.i]: i, [SVC.s]: s }, $unset: { [SVC.r]: '' as const } } };
    });
    if (!(await ctx.cas.rebuild(ctx.objects, items))) return; // everything left is being rewritten right now
  }
}

/** The recorded indexes of a model (for handles keeping other declarations' indexes). */
export async function readRecord(models: Collection<ModelRecord>, key: string): Promise<RecordedIndex[]> {
  return (await models.findOne({ _id: key }))?.indexes ?? [];
}

/**
 * Two gateway processes starting together upsert the same record; MongoDB can fail one upsert
 * with a duplicate key (E11000) when both try to insert. The record exists then: write again.
 */
async function upsertRecord(models: Collection<ModelRecord>, key: string, indexes: RecordedIndex[]): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await models.replaceOne({ _id: key }, { indexes }, { upsert: true });
      return;
    } catch (e) {
      if (!isDuplicateKey(e) || attempt >= 5) throw e;
    }
  }
}

/** One pass over all stored objects, BATCH_SIZE at a time. */
async function rebuildValues(
  ctx: SyncContext,
  model: StorageModel,
  rebuild: IndexDescriptor[],
  reclaim: IndexDescriptor[],
  onProgress?: (p: IndexBuildProgress) => void,
): Promise<void> {
  const touched = [...new Set([...rebuild, ...reclaim])];
  const uniqueModel: StorageModel = { ...model, indexes: reclaim };
  let processed = 0;
  const updateOf = (doc: StoredDoc) => {
    const fields = indexFields(model, fromDoc(doc), touched);
    const $set: Record<string, unknown> = {};
    const $unset: Record<string, ''> = {};
    for (const d of rebuild) {
      const f = enc(d.name);
      if (fields.i[f]) {
        $set[`${SVC.i}.${f}`] = fields.i[f];
        $set[`${SVC.s}.${f}`] = fields.s[f];
      } else {
        $unset[`${SVC.i}.${f}`] = '';
        $unset[`${SVC.s}.${f}`] = '';
      }
    }
    return { fields, update: { ...(Object.keys($set).length && { $set }), ...(Object.keys($unset).length && { $unset }) } };
  };
  const flush = async (batch: StoredDoc[]) => {
    const items: RebuildItem[] = [];
    for (const doc of batch) {
      const { fields, update } = updateOf(doc);
      // Conditional on the version: an object written meanwhile already has fresh values
      // (every write goes through the new model during a sync, see index.ts).
      if (rebuild.length) items.push({ name: doc._id, g: doc._svc.g, v: doc._svc.v, update });
      // A unique index built over existing objects that share a value fails here
      // (UniqueViolation naming the index), like MongoDB's unique index build would.
      await ctx.claims.acquire(doc._id, doc._svc.g, doc._svc.v, uniqueValues(uniqueModel, fields));
    }
    if (items.length) await ctx.cas.rebuild(ctx.objects, items);
    processed += batch.length;
    for (const d of touched) onProgress?.({ index: d.name, processed });
  };

  await eachPage(ctx.objects, { [SVC.i]: 0, [SVC.s]: 0 }, flush);
}

/**
 * Removes the values of indexes that are gone (`fields`: their encoded names) from the objects
 * that hold them, through the compare-and-set's rebuild like any index rebuild. Not with one
 * `updateMany`: on FerretDB that reads the matching documents in one pass and writes each back
 * by `_id` as it read it, so every write made to those objects while it ran was undone.
 */
async function dropValues(ctx: SyncContext, fields: string[]): Promise<void> {
  const projection = { _id: 1, [SVC.v]: 1, [SVC.g]: 1, ...Object.fromEntries(fields.map((f) => [`${SVC.i}.${f}`, 1])) };
  await eachPage(ctx.objects, projection, async (batch) => {
    const items: RebuildItem[] = [];
    for (const doc of batch) {
      const held = fields.filter((f) => doc._svc?.i?.[f] !== undefined);
      if (!held.length) continue;
      const $unset = Object.fromEntries(held.flatMap((f) => [[`${SVC.i}.${f}`, ''], [`${SVC.s}.${f}`, '']])) as Record<string, ''>;
      items.push({ name: doc._id, g: doc._svc.g, v: doc._svc.v, update: { $unset } });
    }
    if (items.length) await ctx.cas.rebuild(ctx.objects, items);
  });
}

/**
 * Every stored object, BATCH_SIZE at a time, in `_id` order. Pages (keyset pagination) rather
 * than one long-lived server cursor: each page is read completely before its writes, so no
 * read stays open across them (on FerretDB/SQLite an open read pins the WAL and slows every
 * later write). On MongoDB each page is an `_id` index range scan.
 */
async function eachPage(objects: Collection<StoredDoc>, projection: Record<string, number>, each: (batch: StoredDoc[]) => Promise<void>): Promise<void> {
  let after: string | undefined;
  for (;;) {
    const batch = await objects
      .find(after === undefined ? {} : { _id: { $gt: after } }, { projection, batchSize: BATCH_SIZE })
      .sort({ _id: 1 })
      .limit(BATCH_SIZE)
      .toArray();
    if (batch.length === 0) break;
    after = batch.at(-1)!._id;
    await each(batch);
    if (batch.length < BATCH_SIZE) break;
  }
}
