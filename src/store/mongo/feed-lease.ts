/**
 * The writer lease of the change feed (feed.ts has the protocol): one writer identity per store
 * (process), whose lease (`writer:<id>` in `_svc_feed`) is renewed every second while it writes
 * or has something unsettled. Readers repair a pending entry only when its writer's lease stopped
 * moving (feed-reader.ts), claims and markers are taken over the same way (claims.ts, cas.ts),
 * and a writer never writes an object under a stale lease of its own (write.ts). It also sends
 * the outcomes of this process's entries in batches (`settle`).
 */
import { randomBytes } from 'node:crypto';
import type { Collection, Db } from 'mongodb';
import { StoreError } from '../errors.js';
import { TimeBounds } from './bounded.js';
import { FEED_META, type FeedDoc, type MetaDoc } from './feed-segments.js';

export const LEASE_REFRESH_MS = 1000;
/** The lease is renewed for this long after a write began (FeedWriter.tick). */
const LEASE_IDLE_MS = 10_000;
/** Outcomes of entries are sent in batches after this long (FeedWriter.settle). */
const CONFIRM_MS = 20;
/** A writer whose own lease is older than this does not write objects. */
export const LEASE_SELF_STALE_MS = 3000;
/** A lease that has not moved for this long (observed locally) belongs to a dead writer. */
export const LEASE_DEAD_MS = 6000;
/** The message of the error a writer raises when its own lease is stale (nothing was written). */
export const LEASE_STALE = 'the change feed lease cannot be renewed';

/** One per store: the process's writer identity and its lease. */
export class FeedWriter {
  readonly id = randomBytes(8).toString('hex');
  private lastRenewed = 0;
  private timer: NodeJS.Timeout | undefined;
  /** The renewal in flight: renewals never overlap (a stalled server would pile them up). */
  private renewing: Promise<void> | undefined;
  private readonly meta: Collection<MetaDoc>;
  /**
   * Outcomes of this process's entries not yet recorded in the log: confirmations (and aborts)
   * are sent in batches, one `update` per segment for every entry settled within CONFIRM_MS
   * (feed bookkeeping off the request path), and retried with every lease renewal when they
   * fail. This process's readers take them as recorded (`repair`); other processes' readers
   * wait at them as at any live writer's pending entry, for CONFIRM_MS and a round trip.
   */
  readonly unresolved = new Map<string, { coll: Collection<FeedDoc>; id: string; s: 'c' | 'a' }>();

  /** The key of an entry in `unresolved` (positions are per feed; one writer serves every feed). */
  static key(coll: Collection<FeedDoc>, position: string): string {
    return `${coll.collectionName}#${position}`;
  }
  private flushTimer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  /** When this process last began a write; the lease is renewed while writes are recent. */
  private lastWrite = 0;
  /** Something of this process may still be pending in a log (a doubtful write): keep the lease. */
  busy: () => boolean = () => false;

  /** `bounds`: the abort signals of the store's operations (bounded.ts). */
  constructor(
    db: Db,
    readonly bounds = new TimeBounds(),
  ) {
    this.meta = db.collection<MetaDoc>(FEED_META);
  }

  /** Resolves when this process may write objects (its lease is fresh). */
  async ready(): Promise<void> {
    this.lastWrite = Date.now();
    if (!this.timer) {
      this.timer = setInterval(() => this.tick(), LEASE_REFRESH_MS);
      this.timer.unref();
    }
    if (Date.now() - this.lastRenewed > LEASE_SELF_STALE_MS / 2) await this.renew();
    if (Date.now() - this.lastRenewed > LEASE_SELF_STALE_MS) {
      throw new StoreError('Unavailable', LEASE_STALE);
    }
  }

  /**
   * The lease is kept moving only while this process writes (or has something unsettled): an
   * idle gateway sends nothing for it. A writer that went idle has no pending entry and no
   * marker in use, so others taking it for gone loses nothing; its next write renews first.
   */
  private tick(): void {
    if (Date.now() - this.lastWrite < LEASE_IDLE_MS || this.unresolved.size || this.busy()) {
      void this.renew();
      return;
    }
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Records the outcome of an entry in a coming batch. */
  settle(position: string, coll: Collection<FeedDoc>, s: 'c' | 'a'): void {
    this.unresolved.set(FeedWriter.key(coll, position), { coll, id: position, s });
    this.scheduleFlush();
  }

  private scheduleFlush(): void {
    this.flushTimer ??= setTimeout(() => {
      this.flushTimer = undefined;
      // One batch at a time: what was settled meanwhile goes in the next one.
      if (this.flushing) this.scheduleFlush();
      else void this.flush();
    }, CONFIRM_MS);
  }

  /** Sends the recorded outcomes: one update per segment and outcome. */
  flush(): Promise<void> {
    this.flushing ??= (async () => {
      const groups = new Map<string, { coll: Collection<FeedDoc>; s: 'c' | 'a'; ids: string[] }>();
      for (const u of this.unresolved.values()) {
        const k = `${u.coll.collectionName}\n${u.s}`;
        let g = groups.get(k);
        if (!g) groups.set(k, (g = { coll: u.coll, s: u.s, ids: [] }));
        g.ids.push(u.id);
      }
      for (const g of groups.values()) {
        try {
          const r = await g.coll.updateMany({ _id: { $in: g.ids }, s: 'p' }, { $set: { s: g.s } }, this.bounds.within(LEASE_SELF_STALE_MS));
          let left = new Set<string>();
          if (r.matchedCount < g.ids.length) {
            // Fewer matched than sent (seen on FerretDB under concurrent writes): keep those
            // still pending for the next batch.
            const still = await g.coll.find({ _id: { $in: g.ids }, s: 'p' }, { projection: { _id: 1 }, ...this.bounds.within(LEASE_SELF_STALE_MS) }).toArray();
            left = new Set(still.map((d) => d._id));
          }
          for (const id of g.ids) {
            const key = FeedWriter.key(g.coll, id);
            if (!left.has(id) && this.unresolved.get(key)?.s === g.s) this.unresolved.delete(key);
          }
          if (left.size) this.scheduleFlush();
        } catch {
          // retried with the next lease renewal
        }
      }
    })().finally(() => (this.flushing = undefined));
    return this.flushing;
  }

  /**
   * True when writer `w` is gone: its lease is missing (it closed) or has not moved for
   * LEASE_DEAD_MS by this process's clock (a lease is renewed every second while its writer
   * has anything in progress).
   */
  async gone(w: string): Promise<boolean> {
    const lease = await this.meta.findOne({ _id: `writer:${w}` });
    return !lease?.at || Date.now() - new Date(lease.at).getTime() > LEASE_DEAD_MS;
  }

  /** True while the lease is fresh enough to write an object. */
  fresh(): boolean {
    return Date.now() - this.lastRenewed <= LEASE_SELF_STALE_MS;
  }

  private renew(): Promise<void> {
    this.renewing ??= this.renewOnce().finally(() => (this.renewing = undefined));
    return this.renewing;
  }

  private async renewOnce(): Promise<void> {
    const started = Date.now();
    try {
      // A renewal that took longer than the lease is useless: give up on it (and its connection).
      await this.meta.updateOne({ _id: `writer:${this.id}` }, { $set: { at: new Date() } }, { upsert: true, ...this.bounds.within(LEASE_SELF_STALE_MS) });
      // Never backwards: the lease is as fresh as the latest renewal that started and succeeded.
      if (started > this.lastRenewed) this.lastRenewed = started;
    } catch {
      return;
    }
    if (this.unresolved.size && !this.flushTimer) await this.flush();
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    await this.flushing;
    await this.flush();
    await this.meta.deleteOne({ _id: `writer:${this.id}` }).catch(() => undefined);
  }
}
