/**
 * The embedded store's change feed: one row per committed change in `svc_changes`, written in
 * the SAME SQLite transaction as the object, so a change is in the feed if and only if it is
 * committed (a crash cannot separate them). SQLite serialises writers and assigns positions
 * (AUTOINCREMENT) inside the write transaction, so commit order equals position order and a
 * reader never sees a hole.
 *
 *   svc_changes(pos, slot, type, object, previous, at)   pos = the resourceVersion of the change
 *   svc_feed_floor(slot, pruned_to)                      changes at or before pruned_to are gone
 *
 * Retention (`prune`) must not cost more as the log grows. Positions are global, so one model's
 * (slot's) rows interleave with other models'; the pass touches only this slot's entries of the
 * index svc_changes_slot (slot, pos), and only as many as it must:
 *
 * - Age: `at` grows with pos (stamped inside the write transaction, which holds SQLite's write
 *   lock). Walking up from the floor to the first row young enough visits only expired rows,
 *   which the pass then deletes, so each row is walked over once in its life (amortised O(1) per
 *   write). The cut (the new floor) is the last expired row of this model (MAX(pos) … pos < the
 *   young one: one index seek), not the young row's pos − 1, so a position between the two (a
 *   change of another model) stays resumable. Were `at` ever out of order (a wall clock stepped
 *   back), the walk stops at the first young row and keeps what follows: more than a scan for
 *   "the newest row older than the limit" would delete, never less. Runs every PRUNE_EVERY writes
 *   of the model in this process.
 * - Count: "the newest maxEvents" needs a walk from the top (OFFSET maxEvents) of up to maxEvents
 *   entries; nothing cheaper is exact without a counter, and a counter in memory is not the truth
 *   when several processes share the file. So: (1) the slot's rows all lie in (floor, head], head
 *   = the AUTOINCREMENT sequence; when head − floor ≤ maxEvents the count cannot exceed maxEvents
 *   and there is no walk; (2) otherwise the walk runs at most every `countEvery` = max(256,
 *   ⌈maxEvents / 16⌉) writes of the model in this process: ≤ 16 index steps per write amortised,
 *   whatever the log holds. History may then exceed maxEvents by up to countEvery writes per
 *   writing process until the next walk; keeping more is the safe direction.
 * setFloor and DELETE commit in one IMMEDIATE transaction (the floor never claims rows that are
 * still there, nor the reverse); a pass is best effort after a write and runs once at start-up.
 * Measured: `BENCH_FEED_HISTORY=only npm run bench` (bench/RESULTS.md at bc5cbff, "Change-log retention").
 *
 * Plans (EXPLAIN QUERY PLAN, SQLite 3.53; test/store/embedded.test.ts checks them, with and
 * without planner statistics): every retention statement is a SEARCH of svc_changes_slot
 * (slot=?), bounded by pos where it walks (`pos>?` from the floor, `pos<?`); MAX(pos) uses the
 * index's min/max optimisation (one seek). INDEXED BY pins the index: with `sqlite_stat1` rows
 * (PRAGMA optimize runs ANALYZE) the planner otherwise picks the rowid range `pos>?` for the age
 * walk, which would walk every model's rows after the floor.
 */
import { expired, type ChangeLog, type FeedRetention, type LogRead } from '../feed/index.js';
import type { ApiObject } from '../object.js';
import type { ChangeEvent, WatchEventType } from '../types.js';
import { guard, type DB, type Statement } from './sqlite.js';

export function createChangeTables(db: DB): void {
  db.exec(`
    CREATE TABLE IF NOT EXISTS svc_changes (
      pos INTEGER PRIMARY KEY AUTOINCREMENT, slot INTEGER NOT NULL, type TEXT NOT NULL,
      object TEXT NOT NULL, previous TEXT, at INTEGER NOT NULL);
    CREATE INDEX IF NOT EXISTS svc_changes_slot ON svc_changes (slot, pos);
    CREATE TABLE IF NOT EXISTS svc_feed_floor (slot INTEGER PRIMARY KEY, pruned_to INTEGER NOT NULL);
  `);
}

interface ChangeRow {
  pos: number | bigint;
  type: WatchEventType;
  object: string;
  previous: string | null;
}

/** Writes of a model (in this process) between two age passes. */
const PRUNE_EVERY = 256;
/** The count walk's budget: index steps per write, amortised (see the header). */
const COUNT_STEPS_PER_WRITE = 16;
const MAX_POS = 2n ** 63n - 1n;

/**
 * A poll of the model's changes after a position. INDEXED BY for the same reason as below: with
 * statistics the planner may take the rowid range `pos>?`, and a quiet model's poll would walk
 * every later change of every model (exported for the plan test).
 */
export const READ_SQL = 'SELECT pos, type, object, previous FROM svc_changes INDEXED BY svc_changes_slot WHERE slot = ? AND pos > ? ORDER BY pos LIMIT ?';

/** The retention pass's statements (exported for the plan test). */
export const RETENTION_SQL = {
  /** The newest row beyond the newest maxEvents: walks up to maxEvents entries from the top. */
  cutByCount: 'SELECT pos FROM svc_changes INDEXED BY svc_changes_slot WHERE slot = ? ORDER BY pos DESC LIMIT 1 OFFSET ?',
  /** The first row young enough above the floor: visits the expired rows, then one more. */
  firstYoung: 'SELECT pos FROM svc_changes INDEXED BY svc_changes_slot WHERE slot = ? AND pos > ? AND at >= ? ORDER BY pos LIMIT 1',
  /** The last row below a position: one seek (min/max optimisation). */
  lastBefore: 'SELECT MAX(pos) FROM svc_changes INDEXED BY svc_changes_slot WHERE slot = ? AND pos < ?',
  prune: 'DELETE FROM svc_changes INDEXED BY svc_changes_slot WHERE slot = ? AND pos <= ?',
} as const;

export class EmbeddedChangeLog implements ChangeLog {
  private readonly st: Record<'read' | 'head' | 'floor' | 'append' | keyof typeof RETENTION_SQL | 'setFloor', Statement>;
  /** Writes between two count walks: max(PRUNE_EVERY, ⌈maxEvents / COUNT_STEPS_PER_WRITE⌉). */
  private readonly countEvery: number;
  private sinceAge = 0;
  private sinceCount = 0;

  constructor(
    private readonly db: DB,
    private readonly slot: number,
    private readonly retention: FeedRetention,
  ) {
    this.countEvery = Math.max(PRUNE_EVERY, Math.ceil(retention.maxEvents / COUNT_STEPS_PER_WRITE));
    this.st = guard(() => ({
      read: db.prepare(READ_SQL).safeIntegers(),
      head: db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'svc_changes'").pluck().safeIntegers(),
      floor: db.prepare('SELECT pruned_to FROM svc_feed_floor WHERE slot = ?').pluck().safeIntegers(),
      append: db.prepare('INSERT INTO svc_changes (slot, type, object, previous, at) VALUES (?, ?, ?, ?, ?)'),
      cutByCount: db.prepare(RETENTION_SQL.cutByCount).pluck().safeIntegers(),
      firstYoung: db.prepare(RETENTION_SQL.firstYoung).pluck().safeIntegers(),
      lastBefore: db.prepare(RETENTION_SQL.lastBefore).pluck().safeIntegers(),
      prune: db.prepare(RETENTION_SQL.prune),
      setFloor: db.prepare(
        'INSERT INTO svc_feed_floor (slot, pruned_to) VALUES (?, ?) ON CONFLICT(slot) DO UPDATE SET pruned_to = MAX(pruned_to, excluded.pruned_to)',
      ),
    }));
    this.prune();
  }

  /** Records a change; call inside the object's write transaction. */
  append(type: WatchEventType, object: string, previous: string | null): void {
    this.st.append.run(this.slot, type, object, previous, Date.now());
  }

  /** After a committed write: every PRUNE_EVERY writes drop expired history, every countEvery also excess. */
  committed(): void {
    const byCount = ++this.sinceCount >= this.countEvery;
    if (++this.sinceAge < PRUNE_EVERY && !byCount) return;
    this.sinceAge = 0;
    if (byCount) this.sinceCount = 0;
    try {
      this.prune(byCount);
    } catch {
      // retention is best effort; the next pass retries
    }
  }

  /** One retention pass: by age always, by count too unless `byCount` is false (see the header). */
  prune(byCount = true): void {
    guard(() =>
      this.db
        .transaction(() => {
          const floor = (this.st.floor.get(this.slot) as bigint | undefined) ?? 0n;
          let cut = floor;
          if (byCount) {
            const head = (this.st.head.get() as bigint | undefined) ?? 0n;
            if (head - floor > BigInt(this.retention.maxEvents)) {
              const c = this.st.cutByCount.get(this.slot, this.retention.maxEvents) as bigint | undefined;
              if (c !== undefined && c > cut) cut = c;
            }
          }
          const young = this.st.firstYoung.get(this.slot, floor, Date.now() - this.retention.maxAgeMs) as bigint | undefined;
          const byAge = this.st.lastBefore.get(this.slot, young ?? MAX_POS) as bigint | null;
          if (byAge !== null && byAge > cut) cut = byAge;
          if (cut <= floor) return;
          this.st.setFloor.run(this.slot, cut);
          this.st.prune.run(this.slot, cut);
        })
        .immediate(),
    );
  }

  async read(after: bigint, limit: number, maxBytes = Infinity): Promise<LogRead> {
    const events: ChangeEvent[] = [];
    let bytes = 0;
    let through = after;
    let more = false;
    // Row by row: the rows after the byte budget are never fetched.
    guard(() => {
      for (const r of this.st.read.iterate(this.slot, after, limit) as IterableIterator<ChangeRow>) {
        bytes += r.object.length + (r.previous?.length ?? 0);
        const object = JSON.parse(r.object) as ApiObject;
        const e: ChangeEvent = { type: r.type, object, resourceVersion: String(r.pos) };
        if (r.type === 'DELETED') e.previous = JSON.parse(r.object) as ApiObject;
        else if (r.previous !== null) e.previous = JSON.parse(r.previous) as ApiObject;
        events.push(e);
        through = BigInt(r.pos);
        if (bytes >= maxBytes) {
          more = events.length < limit;
          break;
        }
      }
    });
    // Only committed changes are stored (at increasing positions): `limit` rows span at least
    // `limit` positions, so a full read is seen as one.
    return { events, through, bytes, more };
  }

  async head(): Promise<bigint> {
    return guard(() => (this.st.head.get() as bigint | undefined) ?? 0n);
  }

  /** Object and change commit in one transaction: nothing is visible beyond the head. */
  horizon(): Promise<bigint> {
    return this.head();
  }

  async check(from: bigint): Promise<void> {
    const rv = String(from);
    if (from > (await this.head())) throw expired(rv, 'is not a position of this change feed');
    const floor = guard(() => (this.st.floor.get(this.slot) as bigint | undefined) ?? 0n);
    if (from < floor) throw expired(rv);
  }
}
