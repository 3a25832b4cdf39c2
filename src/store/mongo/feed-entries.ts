/**
 * The writer side of the change feed (feed.ts has the protocol): step 1, the pending entry
 * (`begin`: its position allocated by the insert of its `_id`), and step 3, its outcome
 * (`finish`, sent in batches by the lease's writer, feed-lease.ts). An entry whose step the
 * client gave up on without an answer is in doubt (`failed`, `doubt`) and settled here: a fenced
 * position for step 1, and for step 2 the object write completed (resent where that is safe) or
 * waited for up to DOUBT_MS. It also moves the shared head hint.
 */
import { randomBytes } from 'node:crypto';
import { StoreError } from '../errors.js';
import type { ApiObject } from '../object.js';
import type { WatchEventType } from '../types.js';
import { encodeObject } from './document.js';
import { guard, isDuplicateKey } from './errors.js';
import { FeedWriter, LEASE_REFRESH_MS, LEASE_SELF_STALE_MS, LEASE_STALE } from './feed-lease.js';
import type { FeedReader } from './feed-reader.js';
import type { Retention } from './feed-retention.js';
import { pad, type FeedDoc, type FeedSegments } from './feed-segments.js';

/** A doubtful object write (step 2 given up by the client) not seen by then did not happen. */
const DOUBT_MS = 6000;
/** The shared head hint (`head:<key>`) is moved at most this often per process. */
const HINT_MS = 100;

/** How a writer settles an object write (step 2) the client got no answer for. */
export interface Settle {
  /**
   * Sends the same conditional object write again and resolves once the server answered; the
   * entry is then settled from the object. Only where that write is atomic (feed.ts).
   * Without it, the entry is confirmed once the write shows and aborted if it has not after
   * DOUBT_MS.
   */
  complete?: () => Promise<void>;
  /** Runs once the entry is settled (the write has shown, or will not happen). */
  settled?: () => void;
}

export interface ChangeIntent {
  type: WatchEventType;
  name: string;
  /** New state (last state for DELETED). */
  object: ApiObject;
  previous?: ApiObject;
  /** Feed position of the state this write replaces (`f` of the stored document). */
  pf: string | null;
  g: string;
}

export class FeedEntries {
  private knownAt = 0;
  /** The highest position handed to a local writer (concurrent local writes take distinct ones). */
  private reserved = 0n;

  constructor(
    private readonly segs: FeedSegments,
    private readonly writer: FeedWriter,
    /** Tells whether a doubtful write happened (the repair's judgement). */
    private readonly reader: FeedReader,
    private readonly retention: Retention,
    /** Time bound of the writer side's operations, which run inside requests (bounded.ts). */
    private readonly opMs?: number,
  ) {}

  /** Step 1: allocates a position for the change and records it as pending. */
  async begin(c: ChangeIntent): Promise<string> {
    await this.writer.ready();
    let p = await this.candidate();
    for (let dups = 0; ; dups++) {
      const doc: FeedDoc = {
        _id: pad(p),
        s: 'p',
        t: c.type,
        n: c.name,
        o: encodeObject(c.object),
        pf: c.pf,
        g: c.g,
        w: this.writer.id,
        at: new Date(),
        k: randomBytes(6).toString('hex'),
      };
      if (c.previous && c.type === 'MODIFIED') doc.b = encodeObject(c.previous);
      let ours = false;
      try {
        await guard(() => this.segs.coll(p).insertOne(doc, this.writer.bounds.within(this.opMs)));
        ours = true;
      } catch (e) {
        if (!isDuplicateKey(e)) {
          this.doubt(doc._id, 'entry'); // it may still be inserted
          throw e;
        }
        // Against a replica set member the driver retries an insert once after a network
        // error (never against a standalone); on a server without retryable-write
        // deduplication (FerretDB started with --repl-set-name) the retry finds our own first
        // attempt (test/store/mongo-feed-retry.test.ts).
        try {
          ours = (await guard(() => this.segs.coll(p).findOne({ _id: doc._id }, { projection: { k: 1 }, ...this.writer.bounds.within(this.opMs) })))?.k === doc.k;
        } catch (lookup) {
          this.doubt(doc._id, 'entry');
          throw lookup;
        }
      }
      if (!ours) {
        if (this.segs.known < p) this.segs.known = p; // p exists
        if (dups >= 1) {
          // Another process is ahead: jump to the top of the log instead of walking up to it.
          const top = await this.segs.top(p);
          if (top > this.segs.known) this.segs.known = top;
        }
        p = await this.candidate();
        continue;
      }
      if (p > this.segs.known) this.segs.known = p;
      this.knownAt = Date.now();
      this.moveHint(p);
      if (p % this.segs.seg === 0n) void this.retention.prune(p).catch(() => undefined);
      if (!this.writer.fresh()) {
        await this.finish(doc._id, 'a');
        throw new StoreError('Unavailable', LEASE_STALE);
      }
      return doc._id;
    }
  }

  /** Step 3: the object write succeeded (`c`) or did not happen (`a`). */
  async finish(position: string, s: 'c' | 'a'): Promise<void> {
    this.writer.settle(position, this.segs.coll(BigInt(position)), s);
  }

  /**
   * Step 3 after the object write threw: aborted when the write certainly did not happen (a
   * duplicate key, a stale lease; returns true), otherwise left pending and settled by `doubt`
   * (returns false: the write may still have happened).
   */
  async failed(position: string, err: unknown, settle: Settle = {}): Promise<boolean> {
    const certain = isDuplicateKey(err) || (err instanceof StoreError && err.message === LEASE_STALE);
    if (!certain) {
      this.doubt(position, 'object', settle);
      return false;
    }
    await this.finish(position, 'a');
    return true;
  }

  /** Entries of this process whose outcome the client did not learn: when first doubted, and which step. */
  private readonly doubtful = new Map<string, { since: number; step: 'entry' | 'object' } & Settle>();
  private doubtTimer: NodeJS.Timeout | undefined;
  private settling = false;
  /** Called when a doubtful entry was confirmed (the feed can move on). */
  onSettled: (() => void) | undefined;

  /**
   * Store closing: stops settling. Entries still in doubt stay pending; the writer's lease goes
   * with the store, so readers repair them as a dead writer's.
   */
  close(): void {
    if (this.doubtTimer) clearInterval(this.doubtTimer);
    this.doubtTimer = undefined;
    this.doubtful.clear();
  }

  /** Whether some write of this log is still in doubt (the writer keeps its lease meanwhile). */
  get doubting(): boolean {
    return this.doubtful.size > 0;
  }

  /** Step 1 or 2 of a write gave up without an answer: settled by the doubt tick (feed.ts). */
  private doubt(position: string, step: 'entry' | 'object', settle: Settle = {}): void {
    this.doubtful.set(position, { since: Date.now(), step, ...settle });
    if (!this.doubtTimer) {
      this.doubtTimer = setInterval(() => void this.settleDoubtful(), 1000);
      this.doubtTimer.unref();
    }
    if (step === 'entry') void this.settleDoubtful();
  }

  private async settleDoubtful(): Promise<void> {
    if (this.settling) return;
    this.settling = true;
    let settled = false;
    try {
      for (const [id, { since, step, complete, settled: done }] of this.doubtful) {
        const coll = this.segs.coll(BigInt(id));
        if (step === 'entry') {
          // Fence first: from then on no insert of this position can land.
          try {
            await coll.updateOne(
              { _id: id },
              { $setOnInsert: { s: 'a', t: 'ADDED', n: '', o: '', g: '', w: 'abandoned', at: new Date() } },
              { upsert: true, ...this.writer.bounds.within(LEASE_SELF_STALE_MS) },
            );
          } catch (e) {
            if (!isDuplicateKey(e)) throw e; // someone inserted it meanwhile: fenced too
          }
          await coll.updateOne({ _id: id, s: 'p', w: this.writer.id }, { $set: { s: 'a' } }, this.writer.bounds.within(LEASE_SELF_STALE_MS));
          this.doubtful.delete(id);
          settled = true;
          continue;
        }
        if (complete) {
          // Never write an object under a stale lease (a reader may be judging the entry).
          if (!this.writer.fresh()) continue;
          try {
            await complete();
          } catch {
            continue; // no answer again: the next tick tries again
          }
        }
        const d = await coll.findOne({ _id: id }, this.writer.bounds.within(LEASE_SELF_STALE_MS));
        let s: 'c' | 'a' | undefined;
        if (!d || d.s !== 'p') s = undefined;
        else if (await this.reader.happened(d)) s = 'c';
        else if (complete || Date.now() - since > DOUBT_MS) s = 'a';
        else continue;
        if (s) await coll.updateOne({ _id: id, s: 'p' }, { $set: { s } }, this.writer.bounds.within(LEASE_SELF_STALE_MS));
        this.doubtful.delete(id);
        done?.();
        settled = true;
      }
    } catch {
      // the server is busy or away: the next tick tries again
    } finally {
      this.settling = false;
      if (!this.doubtful.size && this.doubtTimer) {
        clearInterval(this.doubtTimer);
        this.doubtTimer = undefined;
      }
    }
    if (settled) this.onSettled?.();
  }

  /** Resolves once this process's lease is fresh (renewing it if needed). */
  ready(): Promise<void> {
    return this.writer.ready();
  }

  /** Whether this process's lease allows writing the object now (step 2 guard). */
  mayWrite(): boolean {
    return this.writer.fresh();
  }

  /** Head hint updates: at most one in flight and one per HINT_MS (not one round trip per write). */
  private hintBusy = false;
  private hintAt = 0;
  private hintWant = 0n;

  private moveHint(p: bigint): void {
    if (p > this.hintWant) this.hintWant = p;
    if (this.hintBusy || Date.now() - this.hintAt < HINT_MS) {
      if (!this.hintTimer && !this.hintBusy) {
        this.hintTimer = setTimeout(() => {
          this.hintTimer = undefined;
          this.moveHint(this.hintWant);
        }, HINT_MS);
        this.hintTimer.unref();
      }
      return;
    }
    this.hintBusy = true;
    this.hintAt = Date.now();
    const want = this.hintWant;
    const n = Number(want);
    void this.segs.meta
      .updateOne({ _id: `head:${this.segs.key}` }, { $max: { n } }, { upsert: true })
      .then(() => {
        if (want > this.hintSent) this.hintSent = want;
      })
      .catch(() => undefined)
      .finally(() => {
        this.hintBusy = false;
        // Other processes' watchers wait for the hint (index.ts, pollHints): positions begun
        // while this update was under way, or a failed update, are published next.
        if (this.hintWant > this.hintSent) this.moveHint(this.hintWant);
      });
  }

  private hintSent = 0n;

  private hintTimer: NodeJS.Timeout | undefined;


  /**
   * The next position to try: after every position known to exist and every one already handed
   * to a local writer. (A position whose writer dies before inserting it is filled as aborted
   * by readers, see walk(), so a gap below existing positions never blocks the feed for long.)
   */
  private async candidate(): Promise<bigint> {
    if (Date.now() - this.knownAt > LEASE_REFRESH_MS) {
      this.knownAt = Date.now();
      const hint = await this.segs.hint(true);
      if (hint > this.segs.known) this.segs.known = hint;
    }
    this.reserved = (this.segs.known > this.reserved ? this.segs.known : this.reserved) + 1n;
    return this.reserved;
  }
}
