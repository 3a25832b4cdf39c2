/**
 * The embedded store's change feed: one row per committed change in `svc_changes`, written in
 * the SAME SQLite transaction as the object, so a change is in the feed if and only if it is
 * committed (a crash cannot separate them). SQLite serialises writers and assigns positions
 * (AUTOINCREMENT) inside the write transaction, so commit order equals position order and a
 * reader never sees a hole.
 *
 *   svc_changes(pos, slot, type, object, previous, at)   pos = the resourceVersion of the change
 *   svc_feed_floor(slot, pruned_to)                      changes at or before pruned_to are gone
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

/** Writes per model between two retention passes. */
const PRUNE_EVERY = 256;

export class EmbeddedChangeLog implements ChangeLog {
  private readonly st: Record<'read' | 'head' | 'floor' | 'append' | 'cutByCount' | 'cutByAge' | 'prune' | 'setFloor', Statement>;
  private writes = 0;

  constructor(
    private readonly db: DB,
    private readonly slot: number,
    private readonly retention: FeedRetention,
  ) {
    this.st = guard(() => ({
      read: db.prepare('SELECT pos, type, object, previous FROM svc_changes WHERE slot = ? AND pos > ? ORDER BY pos LIMIT ?').safeIntegers(),
      head: db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'svc_changes'").pluck().safeIntegers(),
      floor: db.prepare('SELECT pruned_to FROM svc_feed_floor WHERE slot = ?').pluck().safeIntegers(),
      append: db.prepare('INSERT INTO svc_changes (slot, type, object, previous, at) VALUES (?, ?, ?, ?, ?)'),
      cutByCount: db.prepare('SELECT pos FROM svc_changes WHERE slot = ? ORDER BY pos DESC LIMIT 1 OFFSET ?').pluck().safeIntegers(),
      cutByAge: db.prepare('SELECT MAX(pos) FROM svc_changes WHERE slot = ? AND at < ?').pluck().safeIntegers(),
      prune: db.prepare('DELETE FROM svc_changes WHERE slot = ? AND pos <= ?'),
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

  /** After a committed write: every PRUNE_EVERY writes, drop history beyond retention. */
  committed(): void {
    if (++this.writes % PRUNE_EVERY === 0) {
      try {
        this.prune();
      } catch {
        // retention is best effort; the next pass retries
      }
    }
  }

  prune(): void {
    guard(() =>
      this.db
        .transaction(() => {
          const byCount = this.st.cutByCount.get(this.slot, this.retention.maxEvents) as bigint | undefined;
          const byAge = this.st.cutByAge.get(this.slot, Date.now() - this.retention.maxAgeMs) as bigint | null | undefined;
          let cut = byCount ?? 0n;
          if (byAge !== null && byAge !== undefined && byAge > cut) cut = byAge;
          if (cut <= 0n) return;
          this.st.setFloor.run(this.slot, cut);
          this.st.prune.run(this.slot, cut);
        })
        .immediate(),
    );
  }

  async read(after: bigint, limit: number): Promise<LogRead> {
    const rows = guard(() => this.st.read.all(this.slot, after, limit)) as ChangeRow[];
    const events = rows.map((r) => {
      const object = JSON.parse(r.object) as ApiObject;
      const e: ChangeEvent = { type: r.type, object, resourceVersion: String(r.pos) };
      if (r.type === 'DELETED') e.previous = JSON.parse(r.object) as ApiObject;
      else if (r.previous !== null) e.previous = JSON.parse(r.previous) as ApiObject;
      return e;
    });
    // Only committed changes are stored (at increasing positions): `limit` rows span at least
    // `limit` positions, so a full read is seen as one.
    return { events, through: rows.length ? BigInt(rows[rows.length - 1]!.pos) : after };
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
