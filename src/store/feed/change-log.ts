/**
 * What a store adapter provides to the shared feed layer: the durable, ordered change log of one
 * model in the database (the way the Kubernetes cacher reads `storage.Interface`). Positions are
 * decimal integers assigned by the database; every gateway process sharing the database sees the
 * same positions in the same order.
 */
import { StoreError } from '../errors.js';
import type { ChangeEvent } from '../types.js';

/** One read of the log: the committed changes found, and the position the read got to. */
export interface LogRead {
  events: ChangeEvent[];
  /**
   * Every position after the read's start up to here was looked at: the changes among them are
   * `events`, the others were aborted writes. At least the last event's position.
   */
  through: bigint;
  /**
   * About how many bytes of stored objects the read holds (objects before and after), for the
   * poller's merge budget. Absent when the adapter cannot tell cheaply.
   */
  bytes?: number;
  /**
   * The read stopped at its byte budget (`maxBytes`) before `limit` positions: there may be
   * more to read at once.
   */
  more?: boolean;
  /**
   * The read got to every position the adapter knows to exist (it did not stop at a write in
   * progress): nothing more is expected until someone writes. The poller then waits for a wake
   * (`SharedFeed.wake`, the adapter's change hints) or `idlePollMs`, not `pollMs`.
   */
  settled?: boolean;
}

export interface ChangeLog {
  /**
   * The committed changes among the next `limit` positions after `after`, in position order.
   * The answer is always a gap-free prefix: it stops before a position whose write is still in
   * progress (a "hole"), so a later read continues exactly there. A read that got through
   * `limit` positions (`through - after >= limit`) may have more to read at once.
   * With `maxBytes`, the read also stops after the change whose objects (before and after)
   * bring it to `maxBytes` or more, so one read never holds much more than that in memory
   * (objects are up to 1 MiB each); at least one change is read.
   */
  read(after: bigint, limit: number, maxBytes?: number): Promise<LogRead>;
  /** A position such that every change at or before it is committed (or aborted) and readable. */
  head(): Promise<bigint>;
  /**
   * A position at or after every change whose object write may already be visible to a read
   * (committed, or still pending in the log). At least `head()`.
   */
  horizon(): Promise<bigint>;
  /** Rejects with StoreError `Expired` unless the feed still holds every change after `from`. */
  check(from: bigint): Promise<void>;
}

/** How much history a feed keeps: at most `maxEvents` changes per model, none older than `maxAgeMs`. */
export interface FeedRetention {
  maxEvents: number;
  maxAgeMs: number;
}

export const DEFAULT_RETENTION: FeedRetention = { maxEvents: 100_000, maxAgeMs: 24 * 3600_000 };

/** `SVC_FEED_RETENTION_EVENTS` and `SVC_FEED_RETENTION_SECONDS` override the defaults. */
export function retentionFromEnv(env: NodeJS.ProcessEnv = process.env): FeedRetention {
  const num = (v: string | undefined, fallback: number) => {
    const n = Number(v);
    return v !== undefined && v !== '' && Number.isFinite(n) && n > 0 ? n : fallback;
  };
  return {
    maxEvents: Math.floor(num(env.SVC_FEED_RETENTION_EVENTS, DEFAULT_RETENTION.maxEvents)),
    maxAgeMs: num(env.SVC_FEED_RETENTION_SECONDS, DEFAULT_RETENTION.maxAgeMs / 1000) * 1000,
  };
}

/** The numeric value of a position string, or undefined when it is not one. */
export function parsePosition(rv: string): bigint | undefined {
  return /^\d{1,20}$/.test(rv) ? BigInt(rv) : undefined;
}

export const expired = (rv: string, why = 'is older than the change feed keeps or unknown') =>
  new StoreError('Expired', `resourceVersion "${rv}" ${why}; list again and watch from its resourceVersion`);
