/**
 * Low-level helpers of the embedded (SQLite) adapter: opening the database with durable
 * settings, mapping driver failures onto StoreError, and a small prepared-statement cache.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { StoreError } from '../errors.js';
import { numericValue } from '../numeric.js';

export type DB = Database.Database;
export type Statement = Database.Statement;

/** Result codes that mean "the store cannot serve right now", not "your request is wrong". */
const UNAVAILABLE = /^SQLITE_(BUSY|LOCKED|IOERR|FULL|CANTOPEN|READONLY|NOMEM|CORRUPT|NOTADB|PROTOCOL|PERM)/;

export function toStoreError(e: unknown): unknown {
  if (e instanceof StoreError) return e;
  if (e instanceof Database.SqliteError && UNAVAILABLE.test(e.code)) {
    return new StoreError('Unavailable', `embedded store unavailable: ${e.message}`);
  }
  // A constraint the adapter's own checks did not catch first (e.g. another process won a race):
  // the request collided with stored data, it is not a server fault.
  if (e instanceof Database.SqliteError && /^SQLITE_CONSTRAINT/.test(e.code)) {
    if (/^SQLITE_CONSTRAINT_(UNIQUE|PRIMARYKEY)$/.test(e.code)) return new StoreError('UniqueViolation', 'a unique value is already taken');
    return new StoreError('Conflict', `the write conflicts with stored data (${e.code})`);
  }
  // better-sqlite3 throws a TypeError for any use of a closed connection.
  if (e instanceof TypeError && /connection is not open/.test(e.message)) {
    return new StoreError('Unavailable', 'embedded store is closed');
  }
  return e;
}

/** Runs synchronous database work, translating driver errors. */
export function guard<T>(fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    throw toStoreError(e);
  }
}

export function openDatabase(dataDir: string, busyTimeoutMs: number): DB {
  return guard(() => {
    mkdirSync(dataDir, { recursive: true });
    const db = new Database(join(dataDir, 'svc.sqlite'), { timeout: busyTimeoutMs });
    // WAL + NORMAL: a committed transaction is in the WAL file (OS page cache) before the call
    // returns, so it survives a crash of this process; only an OS crash may lose the last ones.
    const mode = db.pragma('journal_mode = WAL', { simple: true });
    if (mode !== 'wal') throw new StoreError('Unavailable', `cannot enable WAL (journal_mode=${String(mode)})`);
    db.pragma('synchronous = NORMAL');
    db.pragma('temp_store = MEMORY');
    // Planner statistics for long-lived connections (SQLite's recommendation), bounded in cost.
    db.pragma('analysis_limit = 1000');
    db.pragma('optimize = 0x10002');
    // The number a numeric index's value stands for, NULL when it is none: range requirements
    // on a numeric index compare numbers (store/types.ts IndexRequirement).
    db.function('svc_num', { deterministic: true }, (v: unknown) => {
      const n = typeof v === 'string' ? numericValue(v) : null;
      return typeof n === 'number' ? n : null;
    });
    return db;
  });
}

/** Prepared statements keyed by SQL text, bounded so ad-hoc list shapes cannot grow it forever. */
export class StatementCache {
  private readonly map = new Map<string, Statement>();
  constructor(
    private readonly db: DB,
    private readonly max = 256,
  ) {}

  get(sql: string, pluck = false): Statement {
    const key = pluck ? `p:${sql}` : sql;
    let st = this.map.get(key);
    if (!st) {
      st = this.db.prepare(sql);
      if (pluck) st.pluck();
      if (this.map.size >= this.max) this.map.delete(this.map.keys().next().value!);
      this.map.set(key, st);
    }
    return st;
  }
}
