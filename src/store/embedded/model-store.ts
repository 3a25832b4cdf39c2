/**
 * Objects of one model in SQLite.
 *
 * Tables (slot = small integer assigned to the model key in `svc_models`):
 *   o_<slot>(name PRIMARY KEY, version, data JSON, s_<k> …)  one row per object; s_<k> is the
 *       sort key of index k (its smallest value, NULL when none), indexed on (s_<k>, name).
 *   i_<slot>(k, value, name)  every value of every secondary index (primary key k, value, name;
 *       secondary index on name for rewrites), for filtering and for the partial unique indexes
 *       `u_<slot>_<k> ON i_<slot>(value) WHERE k=<k>`.
 * `metadata.name` is the primary key itself and has no s_ column or side rows.
 */
import { StoreError } from '../errors.js';
import type { SharedFeed } from '../feed/index.js';
import { isRangeOp } from '../types.js';
import type {
  ChangeEvent,
  KeysetPage,
  KeysetQuery,
  SortKey,
  OnFeedLost,
  IndexRequirement,
  IndexValues,
  ModelStore,
  SortTerm,
  StorageModel,
  StoreListResult,
  StoreQuery,
  Unsubscribe,
  WatchHints,
} from '../types.js';
import type { ApiObject } from '../object.js';
import type { EmbeddedChangeLog } from './changes.js';
import { guard, StatementCache, toStoreError, type DB, type Statement } from './sqlite.js';
import { canonicalValue, canonicalWhere, numericSortKey, numericValue } from '../numeric.js';
import { branchesAfter, keysetTerms, type KeysetBranch } from '../keyset.js';

export const NAME_INDEX = 'metadata.name';

/** A secondary index (anything but metadata.name) as laid out in SQLite. */
export interface SecondaryIndex {
  name: string;
  /** Stable per-model number; never reused, so stale values can't be mistaken for current ones. */
  k: number;
  unique: boolean;
  /** Values are numbers (store/numeric.ts): canonical text in i_, the number as sort key. */
  numeric?: boolean;
}

/**
 * Which handle of a model serves its writes and lists. Every handle of one model key shares
 * one route: when `model()` opens a new index set, writes through older handles go to the new
 * handle at once (so they carry the new index values), and lists once its indexes are built.
 */
export interface ModelRoute {
  write?: EmbeddedModelStore;
  read?: EmbeddedModelStore;
}

export interface ModelLayout {
  slot: number;
  secondary: SecondaryIndex[];
}

export const objTable = (slot: number) => `o_${slot}`;
export const sideTable = (slot: number) => `i_${slot}`;
export const sortCol = (k: number) => `s_${k}`;

/** SQLite compares TEXT bytewise (UTF-8), i.e. by code point; JS `<` compares UTF-16 units. */
const byCodePoint = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));
/** Rows counted at most when estimating which side-table requirement to drive a list from. */
const DRIVER_ESTIMATE_CAP = 2000;
/** The first bound of that count (pickDriver). */
const DRIVER_FIRST_CAP = 64;
/** A page driven from at most this many side-table rows reads every match instead of counting them first (planPage). */
const DRIVE_EVERY = 1000;

/** The requirement a list drives from, and its number of side-table rows when that was counted exactly. */
interface Driver {
  driver: IndexRequirement | undefined;
  rows?: number;
}

/** An object ready to be written: its row and its index values. */
interface PreparedWrite {
  name: string;
  version: number;
  data: string;
  d: Derived[];
}

/** Index values of one object, per secondary index: de-duplicated values and the sort key. */
interface Derived {
  ix: SecondaryIndex;
  values: string[];
  sortKey: string | number | null;
}

export function deriveValues(secondary: SecondaryIndex[], all: IndexValues): Derived[] {
  return secondary.map((ix) => {
    if (ix.numeric) {
      const values = [...new Set((all[ix.name] ?? []).map((v) => canonicalValue(String(v))))];
      return { ix, values, sortKey: numericSortKey(values) };
    }
    const values = [...new Set((all[ix.name] ?? []).map(String))];
    let sortKey: string | null = null;
    for (const v of values) if (sortKey === null || byCodePoint(v, sortKey) < 0) sortKey = v;
    return { ix, values, sortKey };
  });
}

export class EmbeddedModelStore implements ModelStore {
  private readonly o: string;
  private readonly i: string;
  private readonly byName = new Map<string, SecondaryIndex>();
  private readonly stmts: StatementCache;
  private readonly st: Record<
    'get' | 'byRowid' | 'insert' | 'update' | 'remove' | 'versionOf' | 'delSide' | 'insSide' | 'taken',
    Statement
  >;
  private readonly createTx: (name: string, version: number, data: string, d: Derived[]) => void;
  /** Creates in one transaction, each in its own savepoint: errors[i] is the i-th one's failure. */
  private readonly createGroupTx: (writes: PreparedWrite[], errors: unknown[]) => void;
  /** Creates waiting for the next group commit (see create()). */
  private queued: { obj: ApiObject; w: PreparedWrite; done: (failed: boolean, e?: unknown) => void }[] = [];
  private readonly updateTx: (name: string, version: number, data: string, d: Derived[], expected: number) => void;
  private readonly removeTx: (name: string, expected: number, final: string | undefined) => void;
  private readonly readTx: <T>(fn: () => T) => T;

  constructor(
    private readonly db: DB,
    readonly model: StorageModel,
    readonly layout: ModelLayout,
    private readonly changes: EmbeddedChangeLog,
    private readonly feed: SharedFeed,
    private readonly route: ModelRoute = {},
    /** Indexes of an older index set whose values writes keep up to date as well (rebuilds). */
    private readonly legacy?: { model: StorageModel; indexes: SecondaryIndex[] },
  ) {
    this.o = objTable(layout.slot);
    this.i = sideTable(layout.slot);
    for (const ix of layout.secondary) this.byName.set(ix.name, ix);
    this.stmts = new StatementCache(db);
    const { o, i } = this;
    const log = this.changes;
    const cols = [...layout.secondary, ...(legacy?.indexes ?? [])].map((ix) => sortCol(ix.k));
    const st = guard(() => ({
      get: db.prepare(`SELECT data FROM ${o} WHERE name = ?`).pluck(),
      byRowid: db.prepare(`SELECT data FROM ${o} WHERE rowid = ?`).pluck(),
      insert: db.prepare(
        `INSERT INTO ${o} (name, version, data${cols.map((c) => `, ${c}`).join('')})` +
          ` VALUES (?, ?, ?${cols.map(() => ', ?').join('')}) ON CONFLICT(name) DO NOTHING`,
      ),
      update: db.prepare(
        `UPDATE ${o} SET version = ?, data = ?${cols.map((c) => `, ${c} = ?`).join('')}` +
          ` WHERE name = ? AND version = ?`,
      ),
      remove: db.prepare(`DELETE FROM ${o} WHERE name = ? AND version = ? RETURNING data`).pluck(),
      versionOf: db.prepare(`SELECT version FROM ${o} WHERE name = ?`).pluck(),
      delSide: db.prepare(`DELETE FROM ${i} WHERE name = ?`),
      insSide: db.prepare(`INSERT INTO ${i} (k, value, name) VALUES (?, ?, ?)`),
      taken: db.prepare(`SELECT 1 FROM ${i} WHERE k = ? AND value = ? AND name <> ? LIMIT 1`).pluck(),
    }));
    this.st = st;

    // Writes take the write lock up front (BEGIN IMMEDIATE) so a second process can't make
    // the transaction fail half-way with SQLITE_BUSY on lock upgrade.
    const create = db.transaction((name: string, version: number, data: string, d: Derived[]) => {
      if (st.insert.run(name, version, data, ...d.map((x) => x.sortKey)).changes === 0) {
        throw new StoreError('AlreadyExists', `object "${name}" already exists`);
      }
      this.checkUnique(name, d);
      this.insertSide(name, d);
      log.append('ADDED', data, null);
    });
    const update = db.transaction((name: string, version: number, data: string, d: Derived[], expected: number) => {
      const previous = st.get.get(name) as string | undefined;
      if (st.update.run(version, data, ...d.map((x) => x.sortKey), name, expected).changes === 0) {
        this.throwMissingOrConflict(name, expected);
      }
      this.checkUnique(name, d); // throwing rolls the UPDATE back
      st.delSide.run(name);
      this.insertSide(name, d);
      log.append('MODIFIED', data, previous!);
    });
    const remove = db.transaction((name: string, expected: number, final: string | undefined): void => {
      const data = st.remove.get(name, expected) as string | undefined;
      if (data === undefined) this.throwMissingOrConflict(name, expected);
      st.delSide.run(name);
      log.append('DELETED', final ?? data!, null);
    });
    const read = db.transaction((fn: () => unknown) => fn());
    // Nested calls of a transaction function run as savepoints: a failed create is undone alone.
    const createGroup = db.transaction((writes: PreparedWrite[], errors: unknown[]) => {
      writes.forEach((w, n) => {
        try {
          create(w.name, w.version, w.data, w.d);
        } catch (e) {
          errors[n] = toStoreError(e);
        }
      });
    });
    this.createTx = create.immediate;
    this.createGroupTx = createGroup.immediate;
    this.updateTx = update.immediate;
    this.removeTx = remove.immediate;
    // A deferred transaction: the page and its COUNT(*) see the same snapshot.
    this.readTx = read.deferred as <T>(fn: () => T) => T;
  }

  private throwMissingOrConflict(name: string, expected: number): never {
    const v = this.st.versionOf.get(name) as number | undefined;
    if (v === undefined) throw new StoreError('NotFound', `object "${name}" not found`);
    throw new StoreError('Conflict', `object "${name}" has version ${v}, not ${expected}`);
  }

  private checkUnique(name: string, d: Derived[]): void {
    for (const { ix, values } of d) {
      if (!ix.unique) continue;
      for (const v of values) {
        if (this.st.taken.get(ix.k, v, name) !== undefined) {
          throw new StoreError('UniqueViolation', `a value of unique index "${ix.name}" is already taken`, ix.name);
        }
      }
    }
  }

  private insertSide(name: string, d: Derived[]): void {
    for (const { ix, values } of d) for (const v of values) this.st.insSide.run(ix.k, v, name);
  }

  private prepareWrite(obj: ApiObject): PreparedWrite {
    const version = obj.metadata.version ?? 0;
    const d = deriveValues(this.layout.secondary, this.model.indexValues(obj));
    if (this.legacy) d.push(...deriveValues(this.legacy.indexes, this.legacy.model.indexValues(obj)));
    return { name: obj.metadata.name, version, data: JSON.stringify(obj), d };
  }

  /** After a commit: retention bookkeeping, and local watchers hear it at once. */
  private committed(): void {
    this.changes.committed();
    this.feed.wake();
  }

  async get(name: string): Promise<ApiObject | null> {
    const data = guard(() => this.st.get.get(name)) as string | undefined;
    return data === undefined ? null : (JSON.parse(data) as ApiObject);
  }

  /** The handle this one's writes go to (itself unless a newer index set was opened). */
  private get writer(): EmbeddedModelStore {
    return this.route.write ?? this;
  }

  /**
   * Group commit: creates that arrive in the same turn of the event loop (concurrent requests)
   * are written in one transaction, each in its own savepoint, so they share one commit (one
   * WAL append of the pages they touch) instead of paying one each. Each create still answers
   * only after its commit, with its own outcome (AlreadyExists, UniqueViolation: only that
   * create's savepoint is undone); a failure of the transaction itself fails the whole group.
   */
  async create(obj: ApiObject): Promise<ApiObject> {
    if (this.writer !== this) return this.writer.create(obj);
    const w = this.prepareWrite(obj);
    await new Promise<void>((resolve, reject) => {
      const done = (failed: boolean, e?: unknown) => (failed ? reject(e) : resolve());
      if (this.queued.push({ obj, w, done }) === 1) setImmediate(() => this.flushCreates());
    });
    this.committed();
    return JSON.parse(w.data) as ApiObject;
  }

  private flushCreates(): void {
    const batch = this.queued.splice(0);
    // A newer index set took over the writes meanwhile (model()): its handle writes them, with
    // its index values (the rebuild relies on every write after the switch going through it).
    if (this.writer !== this) {
      for (const q of batch) this.writer.create(q.obj).then(() => q.done(false), (e: unknown) => q.done(true, e));
      return;
    }
    if (batch.length === 1) {
      const { w, done } = batch[0]!;
      try {
        guard(() => this.createTx(w.name, w.version, w.data, w.d));
      } catch (e) {
        return done(true, e);
      }
      return done(false);
    }
    const errors: unknown[] = new Array(batch.length);
    try {
      guard(() => this.createGroupTx(batch.map((q) => q.w), errors));
    } catch (e) {
      for (const q of batch) q.done(true, e);
      return;
    }
    batch.forEach((q, n) => (n in errors ? q.done(true, errors[n]) : q.done(false)));
  }

  async update(obj: ApiObject, expectedVersion: number): Promise<ApiObject> {
    if (this.writer !== this) return this.writer.update(obj, expectedVersion);
    const w = this.prepareWrite(obj);
    guard(() => this.updateTx(w.name, w.version, w.data, w.d, expectedVersion));
    this.committed();
    return JSON.parse(w.data) as ApiObject;
  }

  async remove(name: string, expectedVersion: number, final?: ApiObject): Promise<void> {
    if (this.writer !== this) return this.writer.remove(name, expectedVersion, final);
    const data = final === undefined ? undefined : JSON.stringify(final);
    guard(() => this.removeTx(name, expectedVersion, data));
    this.committed();
  }

  async list(query: StoreQuery): Promise<StoreListResult> {
    const numeric = this.layout.secondary.filter((x) => x.numeric).map((x) => x.name);
    const q = numeric.length ? { ...query, where: canonicalWhere(query.where, new Set(numeric)) } : query;
    const reader = this.route.read;
    // A newer handle answers once its indexes are built, unless it lacks an index asked for.
    if (reader && reader !== this && this.servable(reader, q)) return reader.list(q);
    return guard(() =>
      this.readTx(() => {
        const p = this.planPage(q);
        if (p.total !== undefined && (p.total <= p.offset || q.limit === 0)) return { items: [], total: p.total };
        let rows = this.stmts.get(p.sql, true).all(...p.params) as (string | number)[];
        // Every match's row id, in order: their number is the total, the page a slice.
        const every = p.every ? rows.length : undefined;
        if (p.every) rows = rows.slice(p.offset, p.offset + q.limit!);
        if (p.byRowid) rows = rows.map((id) => this.st.byRowid.get(id) as string);
        // A page that isn't full (and isn't past the end) already tells the total.
        const known = (rows.length > 0 || p.offset === 0) && (q.limit === undefined || rows.length < q.limit);
        const total = every ?? p.total ?? (known ? p.offset + rows.length : this.count(q.where));
        return { items: rows.map((r) => JSON.parse(r as string) as ApiObject), total };
      }),
    );
  }

  /**
   * A keyset page (store/keyset.ts). With a side-table filter whose driving requirement holds
   * few rows (pickDriver, at most DRIVE_EVERY), every match is read from it and sorted, as a
   * page-mode list does, and the position cuts them. Otherwise the sort index is walked from
   * the position on, one range per branch after it, each object probed against the filters,
   * until limit + 1 matches are found: the rows before the position are never visited.
   */
  async page(query: KeysetQuery): Promise<KeysetPage> {
    const numeric = this.layout.secondary.filter((x) => x.numeric).map((x) => x.name);
    const q = numeric.length ? { ...query, where: canonicalWhere(query.where, new Set(numeric)) } : query;
    const reader = this.route.read;
    if (reader && reader !== this && this.servable(reader, q)) return reader.page(q);
    return guard(() => this.readTx(() => this.readPage(q)));
  }

  private readPage(q: KeysetQuery): KeysetPage {
    const want = q.limit + 1;
    const found: unknown[][] = [];
    for (const { sql, params } of this.pageQueries(q)) {
      found.push(...(this.stmts.get(sql).raw(true).all(...params, want - found.length) as unknown[][]));
      if (found.length >= want) break;
    }
    const page = found.slice(0, q.limit);
    return {
      items: page.map((r) => JSON.parse(this.st.byRowid.get(r[0]) as string) as ApiObject),
      keys: page.map((r) => r.slice(1) as SortKey),
      more: found.length > q.limit,
    };
  }

  /** SQLite's plan for each query of a keyset page (diagnostics and tests). */
  explainPage(q: KeysetQuery): string[][] {
    return guard(() =>
      this.readTx(() =>
        this.pageQueries(q).map(({ sql, params }) =>
          (this.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params, q.limit + 1) as { detail: string }[]).map((r) => r.detail),
        ),
      ),
    );
  }

  /** The queries of a keyset page, read in turn (each ends with `LIMIT ?`: what is still missing). */
  private pageQueries(q: KeysetQuery): { sql: string; params: unknown[] }[] {
    const terms = keysetTerms(q.sort);
    const orderBy = this.compileOrder(terms);
    const cols = terms.map((t) => this.sortColumn(t.index)).join(', ');
    const { driver, rows } = this.pickDriver(q.where);
    // A lone candidate was not counted: count it up to the bound (at most DRIVE_EVERY + 1 rows).
    const few = rows ?? (driver ? this.sideRows(driver, DRIVE_EVERY + 1) : undefined);
    const drive = driver !== undefined && few !== undefined && few <= DRIVE_EVERY;
    const w = this.compileWhere(q.where, drive ? driver : 'probe');
    const build = (branches: KeysetBranch[] | undefined) => {
      const conds = w.where ? [w.where.slice(' WHERE '.length)] : [];
      const params: unknown[] = [...w.params];
      if (branches) {
        const parts = branches.map((b) => this.compileBranch(terms, b, params));
        conds.push(parts.length ? `(${parts.map((p) => `(${p})`).join(' OR ')})` : '0');
      }
      const where = conds.length ? ` WHERE ${conds.join(' AND ')}` : '';
      return { sql: `SELECT o.rowid, ${cols} FROM ${this.o} AS o${where} ORDER BY ${orderBy} LIMIT ?`, params };
    };
    if (!q.after) return [build(undefined)];
    const branches = branchesAfter(terms, q.after, q.inclusive);
    return drive ? [build(branches)] : branches.map((b) => build([b]));
  }

  /** Side-table rows of an `in` requirement, counted up to `cap`. */
  private sideRows(r: IndexRequirement, cap: number): number {
    const marks = r.values.map(() => '?').join(', ');
    const sql = `SELECT COUNT(*) FROM (SELECT 1 FROM ${this.i} WHERE k = ${this.secondary(r.index).k} AND value IN (${marks}) LIMIT ?)`;
    return this.stmts.get(sql, true).get(...r.values, cap) as number;
  }

  /** One branch after a position as an SQL condition (NULL sorts first, then numbers, then text). */
  private compileBranch(terms: SortTerm[], b: KeysetBranch, params: unknown[]): string {
    const col = (term: number) => this.sortColumn(terms[term]!.index);
    const conds = b.prefix.map((p) => {
      params.push(p.value);
      return `${col(p.term)} IS ?`;
    });
    const c = col(b.term);
    if (b.cond === 'null') conds.push(`${c} IS NULL`);
    else if (b.cond === 'notnull') conds.push(`${c} IS NOT NULL`);
    else {
      conds.push(`${c} ${{ gt: '>', gte: '>=', lt: '<', lte: '<=' }[b.cond]} ?`);
      params.push(b.value);
    }
    return conds.join(' AND ');
  }

  private sortColumn(index: string): string {
    return index === NAME_INDEX ? 'o.name' : `o.${sortCol(this.secondary(index).k)}`;
  }

  private servable(other: EmbeddedModelStore, q: StoreQuery | KeysetQuery): boolean {
    const known = (index: string) => index === NAME_INDEX || other.byName.has(index);
    return q.where.every((r) => known(r.index)) && q.sort.every((t) => known(t.index));
  }

  /** SQLite's plan for the page query of `q`, one line per step (diagnostics and tests). */
  explain(q: StoreQuery): string[] {
    return guard(() =>
      this.readTx(() => {
        const p = this.planPage(q);
        const rows = this.db.prepare(`EXPLAIN QUERY PLAN ${p.sql}`).all(...p.params) as { detail: string }[];
        return rows.map((r) => r.detail);
      }),
    );
  }

  /**
   * Builds the page query. A side-table filter (in/notin on a secondary index) can be answered
   * two ways, and SQLite can't pick between them without knowing how many objects match:
   *  - driving: `name IN (SELECT name FROM i …)` reads every match via the side table, then
   *    sorts them all; best when matches are few;
   *  - probing: walk the sort index in order and test each object with `EXISTS (… name = o.name)`,
   *    stopping after offset+limit matches; best when matches are many.
   * So for a bounded page with such a filter the total is counted first (the answer needs it
   * anyway) and used to choose; unless the requirement driven from holds so few rows that
   * driving wins whatever the total, and then the page query reads every match instead.
   */
  private planPage(q: StoreQuery): { sql: string; params: unknown[]; offset: number; byRowid: boolean; total?: number; every?: true } {
    const offset = Math.max(0, Math.trunc(q.offset || 0));
    const orderBy = this.compileOrder(q.sort);
    // A bounded page selects row ids only, so filtering, sorting and skipping the offset never
    // carry the JSON documents; the page's few documents are fetched by id afterwards.
    const byRowid = q.limit !== undefined;
    // The requirement to drive from is chosen once per list (the count and the page share it).
    let chosen: Driver | undefined;
    const choose = () => (chosen ??= this.pickDriver(q.where));
    const driver = () => choose().driver;
    const page = (probe: boolean) => {
      const w = probe ? this.compileWhere(q.where, 'probe') : this.compileWhere(q.where, driver());
      const what = byRowid ? 'o.rowid' : 'o.data';
      const sql = `SELECT ${what} FROM ${this.o} AS o${w.where} ORDER BY ${orderBy} LIMIT ? OFFSET ?`;
      return { sql, params: [...w.params, q.limit ?? -1, offset], offset, byRowid };
    };
    const sideFilter = q.where.some((r) => r.index !== NAME_INDEX && r.values.length && (r.op === 'in' || r.op === 'notin'));
    const limit = q.limit;
    if (limit === undefined || !sideFilter) return page(false);
    // An upper bound is enough for the heuristic: MAX(rowid) is one B-tree step, COUNT(*) a scan.
    const all = (this.stmts.get(`SELECT COALESCE(MAX(rowid), 0) FROM ${this.o}`, true).get() as number) || 1;
    // Probing visits about (offset+limit)·all/total index entries (~0.4µs each); driving handles
    // `total` matches, each costing a few B-tree lookups and a sort insert (~2.5µs).
    // When the leading sort index is itself filtered, matches sit together along it rather than
    // spread evenly, so probing could walk most of the index: drive instead.
    const lead = q.sort[0]?.index;
    const sortFiltered = q.where.some((r) => r.index === lead && r.op === 'in');
    const drives = (total: number) => sortFiltered || (offset + limit) * all >= 5 * total * total;
    // The driving requirement's rows bound the total from above. When they are few and driving
    // wins even at that bound, the page is driven whatever the total: driving reads and sorts
    // every match for any page, so the query reads every match's row id, and their number is
    // the total (no count first).
    // A lone candidate was not counted: with other requirements to probe, bound its rows (at most
    // DRIVE_EVERY + 1 index entries) rather than count the matches and then drive over them again.
    const c = choose();
    const rows = c.rows ?? (c.driver && q.where.length > 1 ? this.sideRows(c.driver, DRIVE_EVERY + 1) : undefined);
    if (rows !== undefined && rows <= DRIVE_EVERY && drives(rows)) {
      const w = this.compileWhere(q.where, driver());
      const sql = `SELECT o.rowid FROM ${this.o} AS o${w.where} ORDER BY ${orderBy}`;
      return { sql, params: w.params, offset, byRowid, every: true };
    }
    const total = this.count(q.where, driver);
    const probe = !drives(total);
    return { ...page(probe), total };
  }

  /**
   * Number of matches, from indexes only: with a side-table `in` to drive from, along its
   * side-table rows, each other requirement probed by name (side table, or the object table's
   * name index for name terms), so no object row is read (an object row lookup per match cost
   * about 3× the count itself); without one, over the object table's indexes (name or sort
   * column: covering). An object holding several of the driving values has several rows, hence
   * DISTINCT.
   */
  private count(reqs: IndexRequirement[], driver: () => IndexRequirement | undefined = () => this.pickDriver(reqs).driver): number {
    const { sql, params } = this.countQuery(reqs, driver());
    return this.stmts.get(sql, true).get(...params) as number;
  }

  private countQuery(reqs: IndexRequirement[], d: IndexRequirement | undefined): { sql: string; params: unknown[] } {
    if (!d) {
      const w = this.compileWhere(reqs, undefined);
      return { sql: `SELECT COUNT(*) FROM ${this.o} AS o${w.where}`, params: w.params };
    }
    const marks = d.values.map(() => '?').join(', ');
    const w = this.compileWhere(reqs.filter((r) => r !== d), 'probe', 'd.name');
    const what = d.values.length > 1 ? 'DISTINCT d.name' : '*';
    const more = w.where ? ` AND ${w.where.slice(' WHERE '.length)}` : '';
    const sql = `SELECT COUNT(${what}) FROM ${this.i} AS d WHERE d.k = ${this.secondary(d.index).k} AND d.value IN (${marks})${more}`;
    return { sql, params: [...d.values, ...w.params] };
  }

  /** SQLite's plan for the count of matches of `where` (diagnostics and tests). */
  explainCount(where: IndexRequirement[]): string[] {
    return guard(() =>
      this.readTx(() => {
        const { sql, params } = this.countQuery(where, this.pickDriver(where).driver);
        return (this.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[]).map((r) => r.detail);
      }),
    );
  }

  private secondary(index: string): SecondaryIndex {
    const ix = this.byName.get(index);
    if (!ix) throw new Error(`"${index}" is not an index of ${this.model.key}`);
    return ix;
  }

  /**
   * Each requirement becomes one SQL condition answered from an index: in/notin use the side
   * table's primary key (k, value, name), either as a set to drive from or as a per-object
   * probe (see planPage); exists/notexists test the sort column, which is NULL exactly when
   * the object has no value. `driver`: the side-table `in` to drive from (pickDriver), every
   * other one is probed; 'probe': every one is probed.
   * SQLite has no per-value statistics for the side table, so it would drive from whichever
   * `IN (SELECT …)` comes first; the caller drives from the smallest instead.
   * `name`: the column naming the object (`d.name` when counting along the side table, countQuery).
   */
  private compileWhere(reqs: IndexRequirement[], driver: IndexRequirement | 'probe' | undefined, name = 'o.name'): { where: string; params: string[] } {
    const conds: string[] = [];
    const params: string[] = [];
    const probe = driver === 'probe';
    for (const r of reqs) {
      const negate = r.op === 'notin';
      if (r.op === 'in' || r.op === 'notin') {
        // `in` nothing matches nothing; `notin` nothing matches everything.
        if (!r.values.length) {
          if (r.op === 'in') conds.push('0');
          continue;
        }
        const marks = r.values.map(() => '?').join(', ');
        if (r.index === NAME_INDEX) conds.push(`${name} ${negate ? 'NOT IN' : 'IN'} (${marks})`);
        else {
          const k = this.secondary(r.index).k;
          conds.push(
            probe || (driver !== undefined && r !== driver)
              ? `${negate ? 'NOT EXISTS' : 'EXISTS'} (SELECT 1 FROM ${this.i} WHERE k = ${k} AND value IN (${marks}) AND name = ${name})`
              : `${name} ${negate ? 'NOT IN' : 'IN'} (SELECT name FROM ${this.i} WHERE k = ${k} AND value IN (${marks}))`,
          );
        }
        params.push(...r.values);
      } else if (isRangeOp(r.op)) {
        const op = { gt: '>', gte: '>=', lt: '<', lte: '<=' }[r.op];
        const bound = r.values[0];
        if (r.index === NAME_INDEX) {
          conds.push(`${name} ${op} ?`);
          params.push(bound ?? '');
          continue;
        }
        const ix = this.secondary(r.index);
        // Numeric: numbers compare as numbers, a value or bound that is not one never matches.
        const n = ix.numeric ? numericValue(bound ?? '') : undefined;
        if (bound === undefined || (ix.numeric && typeof n !== 'number')) {
          conds.push('0');
          continue;
        }
        const test = ix.numeric ? `svc_num(value) ${op} ${Number(n)}` : `value ${op} ?`;
        conds.push(`EXISTS (SELECT 1 FROM ${this.i} WHERE k = ${ix.k} AND name = ${name} AND ${test})`);
        if (!ix.numeric) params.push(bound);
      } else if (r.index === NAME_INDEX) {
        if (r.op === 'notexists') conds.push('0'); // every object has a name
      } else {
        const ix = this.secondary(r.index);
        if (name === 'o.name') conds.push(`o.${sortCol(ix.k)} ${r.op === 'exists' ? 'IS NOT NULL' : 'IS NULL'}`);
        // Off the object table (counts): the object has side rows of the index exactly when it has a value.
        else conds.push(`${r.op === 'exists' ? 'EXISTS' : 'NOT EXISTS'} (SELECT 1 FROM ${this.i} WHERE name = ${name} AND k = ${ix.k})`);
      }
    }
    return { where: conds.length ? ` WHERE ${conds.join(' AND ')}` : '', params };
  }

  /**
   * The side-table `in` requirement with the fewest rows, if any: the first of the fewest when
   * each is counted up to DRIVER_ESTIMATE_CAP. Counted up to a bound that grows eightfold from
   * DRIVER_FIRST_CAP until one stays below it (then it is exact, and every other one is more),
   * and a candidate only up to the fewest found before it: a selective term found early keeps
   * the counting of a broad one short, in whichever order they come.
   */
  private pickDriver(reqs: IndexRequirement[]): Driver {
    const candidates = reqs.filter((r) => r.op === 'in' && r.index !== NAME_INDEX && r.values.length > 0);
    if (candidates.length < 2) return { driver: candidates[0] };
    for (let cap = DRIVER_FIRST_CAP; ; cap = Math.min(cap * 8, DRIVER_ESTIMATE_CAP)) {
      let best = candidates[0]!;
      let fewest = cap + 1;
      for (const r of candidates) {
        const marks = r.values.map(() => '?').join(', ');
        const sql = `SELECT COUNT(*) FROM (SELECT 1 FROM ${this.i} WHERE k = ${this.secondary(r.index).k} AND value IN (${marks}) LIMIT ?)`;
        const n = this.stmts.get(sql, true).get(...r.values, Math.min(fewest, cap)) as number;
        if (n < fewest) [best, fewest] = [r, n];
      }
      if (fewest < cap) return { driver: best, rows: fewest };
      if (cap >= DRIVER_ESTIMATE_CAP) return { driver: best };
    }
  }

  /** NULL sorts first ascending and last descending in SQLite, which is what the port asks. */
  private compileOrder(sort: SortTerm[]): string {
    const terms = sort.map((t) => {
      const col = t.index === NAME_INDEX ? 'o.name' : `o.${sortCol(this.secondary(t.index).k)}`;
      return `${col} ${t.direction === 'desc' ? 'DESC' : 'ASC'}`;
    });
    if (sort.at(-1)?.index !== NAME_INDEX) terms.push('o.name ASC'); // keep the order total
    return terms.join(', ');
  }

  resourceVersion(): Promise<string> {
    return this.feed.resourceVersion();
  }

  horizon(): Promise<string> {
    return this.feed.horizon();
  }

  watch(from: string | undefined, onEvent: (e: ChangeEvent) => void, onLost?: OnFeedLost, hints?: WatchHints): Promise<Unsubscribe> {
    return this.feed.subscribe(from, onEvent, onLost, hints);
  }
}
