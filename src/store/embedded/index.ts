/**
 * Embedded store: SQLite (better-sqlite3) in `<dataDir>/svc.sqlite`, WAL, synchronous=NORMAL.
 *
 * Meta tables:
 *   svc_models(key, slot, next_k)                 model key -> table slot; next index number
 *   svc_indexes(slot, name, k, fingerprint, uniq, ord)
 *       fingerprint is NULL while the index's values are not (fully) built, so a crash during a
 *       rebuild simply restarts it on the next `model()`.
 * Object layout: see model-store.ts.
 */
import { retentionFromEnv, SharedFeed, type FeedRetention, type SharedFeedOptions } from '../feed/index.js';
import { StoreError } from '../errors.js';
import type { IndexBuildProgress, IndexDescriptor, ModelStore, Store, StorageModel } from '../types.js';
import type { ApiObject } from '../object.js';
import {
  deriveValues,
  EmbeddedModelStore,
  NAME_INDEX,
  objTable,
  sideTable,
  sortCol,
  type ModelLayout,
  type ModelRoute,
  type SecondaryIndex,
} from './model-store.js';
import { createChangeTables, EmbeddedChangeLog } from './changes.js';
import { guard, openDatabase, type DB } from './sqlite.js';

export { EmbeddedModelStore } from './model-store.js';

export interface EmbeddedStoreOptions {
  dataDir: string;
  /** How long a write waits for another process's lock before failing `Unavailable`. */
  busyTimeoutMs?: number;
  /** Objects per transaction when (re)building index values. */
  rebuildBatchSize?: number;
  /** Change-feed history kept per model (default: SVC_FEED_RETENTION_* or 100,000 events / 24 h). */
  retention?: FeedRetention;
  /** Change-feed polling (other processes' writes on the same file are seen within pollMs). */
  feed?: SharedFeedOptions;
}

interface IndexRow {
  name: string;
  k: number;
  fingerprint: string | null;
  uniq: number;
  ord: string;
}

/** What `model()` has to do after the schema is in place. */
interface SyncPlan {
  layout: ModelLayout;
  /** Indexes whose values must be (re)computed for every stored object. */
  pending: SecondaryIndex[];
  /** Old numbers of indexes whose values are rebuilt under a new number. */
  replaced: SecondaryIndex[];
}

const sortIndexName = (slot: number, k: number) => `x_${slot}_${k}`;
const uniqueIndexName = (slot: number, k: number) => `u_${slot}_${k}`;

/** Everything about the index set that affects storage; equal signatures need no schema work. */
const signature = (m: StorageModel) =>
  JSON.stringify(m.indexes.map((d) => [d.name, d.unique, d.order, d.fingerprint]).sort());

export async function createEmbeddedStore(options: EmbeddedStoreOptions): Promise<Store> {
  return new EmbeddedStore(openDatabase(options.dataDir, options.busyTimeoutMs ?? 5000), options);
}

class EmbeddedStore implements Store {
  readonly kind = 'embedded';
  /** One feed per model key for the life of the store, so watchers survive `model()` re-opens. */
  private readonly feeds = new Map<string, { log: EmbeddedChangeLog; feed: SharedFeed }>();
  private readonly batchSize: number;
  private readonly retention: FeedRetention;
  private readonly opened = new Map<string, { sig: string; store: Promise<EmbeddedModelStore> }>();
  private readonly routes = new Map<string, ModelRoute>();

  constructor(
    private readonly db: DB,
    private readonly options: EmbeddedStoreOptions,
  ) {
    this.batchSize = options.rebuildBatchSize ?? 1000;
    this.retention = options.retention ?? retentionFromEnv();
    guard(() => createChangeTables(db));
    guard(() =>
      db.exec(`
        CREATE TABLE IF NOT EXISTS svc_models (
          key TEXT PRIMARY KEY, slot INTEGER NOT NULL UNIQUE, next_k INTEGER NOT NULL DEFAULT 1);
        CREATE TABLE IF NOT EXISTS svc_indexes (
          slot INTEGER NOT NULL, name TEXT NOT NULL, k INTEGER NOT NULL, fingerprint TEXT,
          uniq INTEGER NOT NULL, ord TEXT NOT NULL, PRIMARY KEY (slot, name));
      `),
    );
  }

  async model(m: StorageModel, onProgress?: (p: IndexBuildProgress) => void): Promise<ModelStore> {
    const sig = signature(m);
    const cached = this.opened.get(m.key);
    if (cached?.sig === sig) {
      // Same index set: no schema work. Concurrent callers share one in-flight open.
      const store = await cached.store;
      if (store.model === m) return store;
      const f = this.feed(m.key, store.layout.slot);
      return new EmbeddedModelStore(this.db, m, store.layout, f.log, f.feed, this.route(m.key));
    }
    const store = this.open(m, onProgress);
    this.opened.set(m.key, { sig, store });
    store.catch(() => {
      if (this.opened.get(m.key)?.store === store) this.opened.delete(m.key);
    });
    return store;
  }

  /** Where handles of `key` send their writes and lists (see ModelRoute). */
  private route(key: string): ModelRoute {
    let r = this.routes.get(key);
    if (!r) this.routes.set(key, (r = {}));
    return r;
  }

  /**
   * Schema first; then every write, through whichever handle of this model, goes through the
   * new handle (new layout, new index functions), so a write during the rebuild can't leave
   * an object missing from or stale in a new index: SQLite serialises it with the rebuild's
   * batches, and a batch recomputes from the row as stored. Lists move to the new handle
   * once its indexes are complete.
   */
  private async open(m: StorageModel, onProgress?: (p: IndexBuildProgress) => void): Promise<EmbeddedModelStore> {
    const plan = guard(() => this.db.transaction(() => this.syncSchema(m)).immediate());
    const f = this.feed(m.key, plan.layout.slot);
    const route = this.route(m.key);
    const before = route.write;
    // While an index is rebuilt under a new number, writes keep its old number's values (and
    // uniqueness) too, so handles still reading it stay exact and a failed rebuild loses nothing.
    const legacy = before ? plan.replaced.filter((r) => before.layout.secondary.some((x) => x.k === r.k)) : [];
    const building = new EmbeddedModelStore(this.db, m, plan.layout, f.log, f.feed, route, legacy.length ? { model: before!.model, indexes: legacy } : undefined);
    route.write = building;
    try {
      if (plan.pending.length) await this.rebuild(m, plan, onProgress);
      guard(() => this.db.transaction(() => this.finish(m, plan)).immediate());
    } catch (e) {
      if (route.write === building) route.write = before;
      throw e;
    }
    const next = legacy.length ? new EmbeddedModelStore(this.db, m, plan.layout, f.log, f.feed, route) : building;
    route.write = next;
    route.read = next;
    return next;
  }

  private feed(key: string, slot: number): { log: EmbeddedChangeLog; feed: SharedFeed } {
    let f = this.feeds.get(key);
    if (!f) {
      const log = new EmbeddedChangeLog(this.db, slot, this.retention);
      this.feeds.set(key, (f = { log, feed: new SharedFeed(log, this.options.feed) }));
    }
    return f;
  }

  /** Creates/updates tables, columns and sort indexes; marks indexes needing values. */
  private syncSchema(m: StorageModel): SyncPlan {
    const { db } = this;
    let row = db.prepare('SELECT slot, next_k FROM svc_models WHERE key = ?').get(m.key) as
      | { slot: number; next_k: number }
      | undefined;
    if (!row) {
      const slot = db.prepare('SELECT COALESCE(MAX(slot), 0) + 1 FROM svc_models').pluck().get() as number;
      db.prepare('INSERT INTO svc_models (key, slot) VALUES (?, ?)').run(m.key, slot);
      row = { slot, next_k: 1 };
    }
    const { slot } = row;
    let nextK = row.next_k;
    const o = objTable(slot);
    const i = sideTable(slot);
    db.exec(`
      CREATE TABLE IF NOT EXISTS ${o} (name TEXT PRIMARY KEY, version INTEGER NOT NULL, data TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS ${i} (
        k INTEGER NOT NULL, value TEXT NOT NULL, name TEXT NOT NULL, PRIMARY KEY (k, value, name)
      ) WITHOUT ROWID;
      CREATE INDEX IF NOT EXISTS ${i}_name ON ${i} (name, k);
    `);

    const existing = new Map(
      (db.prepare('SELECT name, k, fingerprint, uniq, ord FROM svc_indexes WHERE slot = ?').all(slot) as IndexRow[]).map(
        (r) => [r.name, r],
      ),
    );
    const wanted = m.indexes.filter((d) => d.name !== NAME_INDEX);
    const secondary: SecondaryIndex[] = [];
    const pending: SecondaryIndex[] = [];
    const replaced: SecondaryIndex[] = [];
    const createSortIndex = (d: IndexDescriptor, k: number) =>
      db.exec(`CREATE INDEX ${sortIndexName(slot, k)} ON ${o} (${sortCol(k)} ${d.order === 'DESC' ? 'DESC' : 'ASC'}, name)`);
    const createUniqueIndex = (k: number) =>
      db.exec(`CREATE UNIQUE INDEX IF NOT EXISTS ${uniqueIndexName(slot, k)} ON ${i} (value) WHERE k = ${k}`);

    for (const d of wanted) {
      const r = existing.get(d.name);
      existing.delete(d.name);
      if (!r || r.fingerprint !== d.fingerprint) {
        // A new index, or one whose values are derived differently: its values go to a fresh
        // number k. The old k (if any) keeps serving (and enforcing) until finish() drops it,
        // so a unique index is never unenforced while it is rebuilt.
        const k = nextK++;
        // A numeric index's sort keys are numbers: a column without TEXT affinity keeps them so.
        db.exec(`ALTER TABLE ${o} ADD COLUMN ${sortCol(k)}${d.numeric ? '' : ' TEXT'}`);
        createSortIndex(d, k);
        if (d.unique) createUniqueIndex(k);
        if (r) {
          replaced.push({ name: r.name, k: r.k, unique: r.uniq === 1 });
          db.prepare('UPDATE svc_indexes SET k = ?, fingerprint = NULL, uniq = ?, ord = ? WHERE slot = ? AND name = ?').run(
            k, d.unique ? 1 : 0, d.order, slot, d.name,
          );
        } else {
          db.prepare('INSERT INTO svc_indexes (slot, name, k, fingerprint, uniq, ord) VALUES (?, ?, ?, NULL, ?, ?)').run(
            slot, d.name, k, d.unique ? 1 : 0, d.order,
          );
        }
        const ix = { name: d.name, k, unique: d.unique, ...(d.numeric && { numeric: true }) };
        secondary.push(ix);
        pending.push(ix);
        continue;
      }
      const ix = { name: d.name, k: r.k, unique: d.unique, ...(d.numeric && { numeric: true }) };
      secondary.push(ix);
      if (r.ord !== d.order) {
        db.exec(`DROP INDEX IF EXISTS ${sortIndexName(slot, r.k)}`);
        createSortIndex(d, r.k);
      }
      // No longer unique: stop enforcing. Newly unique: finish() creates the index (and fails
      // with UniqueViolation when stored objects already share a value).
      if (!d.unique) db.exec(`DROP INDEX IF EXISTS ${uniqueIndexName(slot, r.k)}`);
      db.prepare('UPDATE svc_indexes SET uniq = ?, ord = ? WHERE slot = ? AND name = ?').run(
        d.unique ? 1 : 0, d.order, slot, d.name,
      );
    }

    // Indexes no longer declared are forgotten here; finish() drops their column, physical
    // indexes and values (handles opened earlier may still read them until then).
    for (const r of existing.values()) {
      db.prepare('DELETE FROM svc_indexes WHERE slot = ? AND name = ?').run(slot, r.name);
    }
    db.prepare('UPDATE svc_models SET next_k = ? WHERE slot = ?').run(nextK, slot);
    return { layout: { slot, secondary }, pending, replaced };
  }

  /**
   * Recomputes the values of `plan.pending` for every stored object, `batchSize` objects per
   * transaction (keyset pagination on name), yielding to the event loop between batches.
   */
  private async rebuild(
    m: StorageModel,
    plan: SyncPlan,
    onProgress?: (p: IndexBuildProgress) => void,
  ): Promise<void> {
    const { slot } = plan.layout;
    const o = objTable(slot);
    const i = sideTable(slot);
    const { db } = this;
    const st = guard(() => ({
      batch: db.prepare(`SELECT name, data FROM ${o} WHERE name > ? ORDER BY name LIMIT ?`),
      del: db.prepare(`DELETE FROM ${i} WHERE name = ? AND k = ?`),
      ins: db.prepare(`INSERT INTO ${i} (k, value, name) VALUES (?, ?, ?)`),
      set: db.prepare(`UPDATE ${o} SET ${plan.pending.map((p) => `${sortCol(p.k)} = ?`).join(', ')} WHERE name = ?`),
    }));
    const apply = db.transaction((rows: { name: string; data: string }[]) => {
      for (const { name, data } of rows) {
        const derived = deriveValues(plan.pending, m.indexValues(JSON.parse(data) as ApiObject));
        for (const { ix, values } of derived) {
          st.del.run(name, ix.k);
          for (const v of values) {
            try {
              st.ins.run(ix.k, v, name);
            } catch (e) {
              if (ix.unique && (e as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE') {
                throw new StoreError('UniqueViolation', `stored objects share values of unique index "${ix.name}"`, ix.name);
              }
              throw e;
            }
          }
        }
        st.set.run(...derived.map((x) => x.sortKey), name);
      }
    });
    let after = '';
    let processed = 0;
    for (;;) {
      const rows = guard(() => st.batch.all(after, this.batchSize)) as { name: string; data: string }[];
      if (!rows.length) break;
      guard(() => apply.immediate(rows));
      processed += rows.length;
      after = rows[rows.length - 1]!.name;
      for (const p of plan.pending) onProgress?.({ index: p.name, processed });
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  /** Creates the unique indexes and records the fingerprints whose values are now built. */
  private finish(m: StorageModel, plan: SyncPlan): void {
    const { slot, secondary } = plan.layout;
    for (const ix of secondary) {
      if (!ix.unique) continue;
      try {
        this.db.exec(
          `CREATE UNIQUE INDEX IF NOT EXISTS ${uniqueIndexName(slot, ix.k)} ON ${sideTable(slot)} (value) WHERE k = ${ix.k}`,
        );
      } catch (e) {
        if ((e as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE') {
          throw new StoreError('UniqueViolation', `stored objects share values of unique index "${ix.name}"`, ix.name);
        }
        throw e;
      }
    }
    const setFp = this.db.prepare('UPDATE svc_indexes SET fingerprint = ? WHERE slot = ? AND name = ?');
    const byName = new Map(m.indexes.map((d) => [d.name, d]));
    for (const p of plan.pending) setFp.run(byName.get(p.name)!.fingerprint, slot, p.name);
    this.dropOrphans(slot);
  }

  /**
   * Drops the column, physical indexes and values of every index number k that no index of
   * the model uses any more (removed, replaced by a rebuild, or left by an interrupted one).
   */
  private dropOrphans(slot: number): void {
    const { db } = this;
    const o = objTable(slot);
    const used = new Set(db.prepare('SELECT k FROM svc_indexes WHERE slot = ?').pluck().all(slot) as number[]);
    const cols = (db.prepare(`SELECT name FROM pragma_table_info('${o}')`).pluck().all() as string[])
      .map((c) => /^s_(\d+)$/.exec(c))
      .filter((x): x is RegExpExecArray => x !== null)
      .map((x) => Number(x[1]));
    for (const k of cols) {
      if (used.has(k)) continue;
      db.exec(`DROP INDEX IF EXISTS ${sortIndexName(slot, k)}; DROP INDEX IF EXISTS ${uniqueIndexName(slot, k)}`);
      db.prepare(`DELETE FROM ${sideTable(slot)} WHERE k = ?`).run(k);
      db.exec(`ALTER TABLE ${o} DROP COLUMN ${sortCol(k)}`);
    }
  }

  async ping(): Promise<void> {
    guard(() => this.db.prepare('SELECT 1').get());
  }

  async close(): Promise<void> {
    for (const f of this.feeds.values()) f.feed.close();
    if (!this.db.open) return;
    try {
      this.db.pragma('optimize'); // refreshes planner statistics where they are stale; cheap
    } catch {
      // best effort
    }
    this.db.close();
  }
}
