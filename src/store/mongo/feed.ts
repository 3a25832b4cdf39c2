/**
 * The MongoDB change feed. Needs neither transactions nor change streams, so it runs the same
 * on a standalone server, a replica set, a sharded cluster and FerretDB.
 *
 * Entries: one document per change in `feed.<group>.<version>.<plural>.<segment>`,
 *   { _id: 20-digit position, s: 'p'ending | 'c'ommitted | 'a'borted, t: type, n: name,
 *     o: object (new state; last state for DELETED), b: previous state, pf: feed position of the
 *     state the write replaced, g: incarnation, w: writer id, at: Date }
 * Segments hold a fixed number of consecutive positions each, so every query touches one small
 * collection and retention drops whole segments. The size is chosen when a model's feed is
 * first opened and recorded (`seg:<key>` in `_svc_feed`), so it never changes under a feed:
 * SEGMENT (1,024) on MongoDB, where the `_id` index answers every feed query; FERRET_SEGMENT
 * (64) on FerretDB, which answers only an `_id` equality from its index and scans the whole
 * collection for anything else, the compare-and-set that confirms each entry included (the
 * watch bench on FerretDB: 1,024-position segments gave 48 writes/s and, with 1,000 watchers
 * on another gateway, ratios of 0.54 and 0.44; 256 gave 95 writes/s, 0.79 / 0.83; 64 gave
 * 154–191 writes/s, 0.97 / 0.98). A feed written before the size was recorded keeps 1,024.
 * Every gateway on one database must know the record: do not run a version without it beside
 * this one on FerretDB (it would write 1,024-position segments into a 64-position feed).
 *
 * Positions are dense and assigned by the database: a writer inserts `_id = known + 1`, where
 * `known` is a position known to exist; the insert of an `_id` is atomic everywhere, so exactly
 * one writer gets each position, and on a duplicate it tries the next one.
 *
 * Pending-entry protocol (writes in model-store order):
 *   1. insert the entry as pending (this allocates the position);
 *   2. write the object (compare-and-set), stamping it with `f = position`;
 *   3. confirm the entry (or mark it aborted when the object write failed). Confirmations go
 *      in batches off the request path (FeedWriter.settle: one update per segment for every
 *      entry settled within CONFIRM_MS); this process's readers take them as done at once,
 *      others wait at the entry as at any live writer's until the batch lands.
 * Readers walk positions in order and stop at a pending entry (the "hole"): a later position
 * that committed first is never delivered before it. A pending entry whose writer is dead (its
 * lease in `_svc_feed` stopped moving, e.g. after kill -9) is repaired by any reader: the write
 * happened if the object carries `f = position`, or a later entry replaced that state
 * (`pf = position`), or (for a delete) the object is gone and no other delete of that state
 * exists. A live writer never writes an object while its own lease is stale, so a repair cannot
 * race the writer it judges.
 *
 * A live writer resolves its own doubtful entries (`doubt`): under overload the client can give
 * up on a step (its time bound, bounded.ts) that the server still carries out. When step 1 gave
 * up, the position is fenced (an aborted entry is upserted there, so a late insert of the
 * pending one fails) and an entry of ours found there is aborted: no object was written for it.
 * When step 2 gave up, the entry stays pending. Where the conditional write is atomic (MongoDB)
 * the writer completes it: it sends the same conditional object write again every second until
 * the server answers, then confirms the entry when the object shows the write (`happened`) and
 * aborts it otherwise, so a copy held up on its way cannot land after its entry was settled.
 * Where it is not (FerretDB, cas.ts) nothing is sent again: the writer looks every second for
 * the write to show and aborts the entry when it has not after DOUBT_MS, the longest a copy
 * the client gave up on is taken to stay on its way. Either way `settled` then runs (FerretDB
 * releases the write's marker there). Readers wait at such an entry meanwhile; without this
 * they would wait for as long as the writer lives.
 *
 * `_svc_feed` also holds per model a head hint (`head:<key>`, a recent position) and the retention
 * floor (`floor:<key>`: positions at or below it are gone).
 *
 * Why the entry comes before the object write (so an update is 3 commands on MongoDB: the
 * handler's read, this entry, the conditional write; 4 on FerretDB with the marker, cas.ts),
 * and not after it with the object carrying a pending stamp (the suggestion of the lean-write-path task, which
 * would make it 2). Positions are given by the insert of an `_id`; written after the object,
 * an entry gets its position only after the write is visible. Then:
 *  - The list-then-watch window breaks. A watch lists at `head()` and reconciles the changes up
 *    to `horizon()`, read after the list, against what the list showed (operations/watch.ts).
 *    A write another process has made but not yet appended is visible to the list and gets a
 *    position beyond that horizon, so it is delivered again after the list already gave it.
 *    `horizon()` would have to wait for every process's unappended writes, which no process
 *    knows without a per-write record (a command) or a scan of every object.
 *  - Exactly once. Entries of a dead (or stalled) writer must be appended by someone else,
 *    from the object's stamp; the writer may come back and append it too. Positions are the
 *    only unique key of the log, so deciding who appends a stamp needs one more atomic insert
 *    per stamp (amortised, but then a dead appender between that insert and the entry leaves a
 *    position a hole-filler cannot attribute to an object).
 *  - What the entry holds. A MODIFIED entry carries the state before (`b`, which label-selector
 *    watches need to tell ADDED/MODIFIED/DELETED apart); a helper appending a dead writer's
 *    stamp has only the state after. A delete leaves no object to carry a stamp at all.
 *  - Order per object across processes: the next writer of the object (another process) must
 *    see the previous stamp appended before its own, i.e. wait for or read the other process's
 *    progress.
 * Each can be met, but together they move the feed's correctness argument (dense positions,
 * exactly-once, list/watch consistency, repair) to one that needs a new reconciliation in the
 * watch layer; the entry-first protocol keeps them with one insert per write.
 */
import { randomBytes } from 'node:crypto';
import type { Collection, Db } from 'mongodb';
import { StoreError } from '../errors.js';
import { expired, type ChangeLog, type FeedRetention, type LogRead } from '../feed/index.js';
import type { ApiObject } from '../object.js';
import type { ChangeEvent, WatchEventType } from '../types.js';
import { decodeObject, encodedSize, encodeObject, SVC, type EncodedObject, type StoredDoc } from './document.js';
import { TimeBounds } from './bounded.js';
import { guard, isDuplicateKey } from './errors.js';

export const FEED_META = '_svc_feed';
/** Positions per segment collection (default). */
export const SEGMENT = 1024n;
/**
 * Spans of positions the feed looks back or ahead by (head(), the repair check, retention
 * passes) are this long whatever the segment size: they are about time and write rates, not
 * about collections.
 */
const SPAN = 1024n;
/** Positions per segment on FerretDB (see the header). */
export const FERRET_SEGMENT = 64n;
const LEASE_REFRESH_MS = 1000;
/** The lease is renewed for this long after a write began (FeedWriter.tick). */
const LEASE_IDLE_MS = 10_000;
/** Outcomes of entries are sent in batches after this long (FeedWriter.settle). */
const CONFIRM_MS = 20;
/** A writer whose own lease is older than this does not write objects. */
const LEASE_SELF_STALE_MS = 3000;
/** A lease that has not moved for this long (observed locally) belongs to a dead writer. */
const LEASE_DEAD_MS = 6000;
/** A missing position below existing ones for this long is filled as aborted (its writer gave up or died). */
const HOLE_MS = 3000;
/** A doubtful object write (step 2 given up by the client) not seen by then did not happen. */
const DOUBT_MS = 6000;
/** The message of the error a writer raises when its own lease is stale (nothing was written). */
export const LEASE_STALE = 'the change feed lease cannot be renewed';
/** The shared head hint (`head:<key>`) is moved at most this often per process. */
const HINT_MS = 100;

interface FeedDoc {
  _id: string;
  s: 'p' | 'c' | 'a';
  t: WatchEventType;
  n: string;
  o: EncodedObject;
  b?: EncodedObject;
  pf?: string | null;
  g: string;
  w: string;
  at: Date;
  /** Random per insert attempt: tells a retried insert of one's own entry from another writer's. */
  k?: string;
}

/** How a writer settles an object write (step 2) the client got no answer for. */
export interface Settle {
  /**
   * Sends the same conditional object write again and resolves once the server answered; the
   * entry is then settled from the object. Only where that write is atomic (see the header).
   * Without it, the entry is confirmed once the write shows and aborted if it has not after
   * DOUBT_MS.
   */
  complete?: () => Promise<void>;
  /** Runs once the entry is settled (the write has shown, or will not happen). */
  settled?: () => void;
}

interface MetaDoc {
  _id: string;
  n?: number;
  at?: Date;
}

export const pad = (p: bigint): string => p.toString().padStart(20, '0');

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

export class MongoChangeLog implements ChangeLog {
  private readonly meta: Collection<MetaDoc>;
  /** The highest position known to exist. */
  private known = 0n;
  private knownAt = 0;
  /** The highest position handed to a local writer (concurrent local writes take distinct ones). */
  private reserved = 0n;
  /** Missing positions seen below existing ones: when first seen (local clock). */
  private readonly holes = new Map<string, number>();
  /** Every position at or below this is resolved (read by read()/head()). */
  private resolved = 0n;
  private floorCache = { n: 0n, at: 0 };
  /** Lease observations of other writers: value last seen and when (local clock). */
  private readonly leases = new Map<string, { at: number; since: number }>();

  constructor(
    private readonly db: Db,
    private readonly key: string,
    private readonly base: string,
    private readonly objects: Collection<StoredDoc>,
    private readonly writer: FeedWriter,
    private readonly retention: FeedRetention,
    /** Time bound of the writer side's operations, which run inside requests (bounded.ts). */
    private readonly opMs?: number,
  ) {
    this.meta = db.collection<MetaDoc>(FEED_META);
  }

  /** Positions per segment: recorded per feed, settled by layout() before any use. */
  private seg = SEGMENT;
  private laidOut: Promise<void> | undefined;

  /**
   * Settles the segment size of this feed before anything reads or writes it: the recorded one;
   * for a feed without a record, 1,024 when segments already exist (written before sizes were
   * recorded), else `preferred`, recorded for every later process (the first record wins).
   */
  layout(preferred: bigint): Promise<void> {
    this.laidOut ??= (async () => {
      const id = `seg:${this.key}`;
      let rec = await guard(() => this.meta.findOne({ _id: id }));
      if (!rec?.n) {
        const legacy = (await guard(() => this.listSegments())).length > 0;
        try {
          await guard(() => this.meta.updateOne({ _id: id }, { $setOnInsert: { n: Number(legacy ? SEGMENT : preferred) } }, { upsert: true }));
        } catch (e) {
          if (!isDuplicateKey(e)) throw e; // another process recorded it first (FerretDB upserts are not atomic)
        }
        rec = await guard(() => this.meta.findOne({ _id: id }));
      }
      if (!rec?.n || rec.n < 1) throw new StoreError('Unavailable', `the change feed of ${this.key} has no segment size`);
      this.seg = BigInt(rec.n);
    })();
    this.laidOut.catch(() => (this.laidOut = undefined)); // retried on the next open
    return this.laidOut;
  }

  /** The numbers of this feed's segment collections that exist, in order. */
  private async listSegments(): Promise<bigint[]> {
    const prefix = `${this.base}.`;
    const names = await this.db.listCollections({}, { nameOnly: true }).toArray();
    return names
      .map((c) => c.name)
      .filter((n) => n.startsWith(prefix) && /^\d+$/.test(n.slice(prefix.length)))
      .map((n) => BigInt(n.slice(prefix.length)))
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  }

  private segmentOf(p: bigint): bigint {
    return p / this.seg;
  }

  private segment(seg: bigint): Collection<FeedDoc> {
    return this.db.collection<FeedDoc>(`${this.base}.${seg}`);
  }

  private coll(p: bigint): Collection<FeedDoc> {
    return this.segment(this.segmentOf(p));
  }

  // ----- writer side ------------------------------------------------------------------------

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
        await guard(() => this.coll(p).insertOne(doc, this.writer.bounds.within(this.opMs)));
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
          ours = (await guard(() => this.coll(p).findOne({ _id: doc._id }, { projection: { k: 1 }, ...this.writer.bounds.within(this.opMs) })))?.k === doc.k;
        } catch (lookup) {
          this.doubt(doc._id, 'entry');
          throw lookup;
        }
      }
      if (!ours) {
        if (this.known < p) this.known = p; // p exists
        if (dups >= 1) {
          // Another process is ahead: jump to the top of the log instead of walking up to it.
          const top = await this.top(p);
          if (top > this.known) this.known = top;
        }
        p = await this.candidate();
        continue;
      }
      if (p > this.known) this.known = p;
      this.knownAt = Date.now();
      this.moveHint(p);
      if (p % this.seg === 0n) void this.prune(p).catch(() => undefined);
      if (!this.writer.fresh()) {
        await this.finish(doc._id, 'a');
        throw new StoreError('Unavailable', LEASE_STALE);
      }
      return doc._id;
    }
  }

  /** Step 3: the object write succeeded (`c`) or did not happen (`a`). */
  async finish(position: string, s: 'c' | 'a'): Promise<void> {
    this.writer.settle(position, this.coll(BigInt(position)), s);
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

  /** Step 1 or 2 of a write gave up without an answer: settled by the doubt tick (see the header). */
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
        const coll = this.coll(BigInt(id));
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
        else if (await this.happened(d)) s = 'c';
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
    void this.meta
      .updateOne({ _id: `head:${this.key}` }, { $max: { n } }, { upsert: true })
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

  /** The highest position present in the log, looking from `from`'s segment on. */
  private async top(from: bigint): Promise<bigint> {
    let top = from;
    for (let seg = this.segmentOf(from); ; seg++) {
      const last = await guard(() =>
        this.segment(seg).find({}, { projection: { _id: 1 } }).sort({ _id: -1 }).limit(1).toArray(),
      );
      if (!last[0]) break;
      const p = BigInt(last[0]._id);
      if (p > top) top = p;
    }
    return top;
  }

  /** The head hint; `writing`: on the writer side of a request (time-bounded). Readers share queries (Fresh). */
  private async hint(writing = false): Promise<bigint> {
    if (!writing) return this.freshHint.get();
    const h = await guard(() => this.meta.findOne({ _id: `head:${this.key}` }, this.writer.bounds.within(this.opMs)));
    return h?.n ? BigInt(h.n) : 0n;
  }

  private readonly freshHint = new Fresh(async () => {
    const h = await guard(() => this.meta.findOne({ _id: `head:${this.key}` }));
    return h?.n ? BigInt(h.n) : 0n;
  });

  /**
   * The next position to try: after every position known to exist and every one already handed
   * to a local writer. (A position whose writer dies before inserting it is filled as aborted
   * by readers, see walk(), so a gap below existing positions never blocks the feed for long.)
   */
  private async candidate(): Promise<bigint> {
    if (Date.now() - this.knownAt > LEASE_REFRESH_MS) {
      this.knownAt = Date.now();
      const hint = await this.hint(true);
      if (hint > this.known) this.known = hint;
    }
    this.reserved = (this.known > this.reserved ? this.known : this.reserved) + 1n;
    return this.reserved;
  }

  // ----- retention --------------------------------------------------------------------------

  private async floor(fresh = false): Promise<bigint> {
    if (fresh || Date.now() - this.floorCache.at > 1000) return this.readFloor();
    return this.floorCache.n;
  }

  /**
   * The floor read from the database by a query that starts after the call (see Fresh): a
   * thousand watchers starting at once cost two round trips, not a thousand (each would take a
   * pooled connection, and the driver's pool would grow).
   */
  private readonly freshFloor = new Fresh(async () => {
    const f = await guard(() => this.meta.findOne({ _id: `floor:${this.key}` }));
    this.floorCache = { n: f?.n ? BigInt(f.n) : 0n, at: Date.now() };
    return this.floorCache.n;
  });

  private readFloor(): Promise<bigint> {
    return this.freshFloor.get();
  }

  /**
   * Drops whole segments beyond retention (by count and by age); never the newest two. Runs when
   * a segment fills. The segments are those from the floor up (every position up to the head has
   * one); once every SPAN positions they are listed instead, which also finds any left behind by
   * an interrupted pass (listing thousands of 64-position segments at every boundary would not do).
   */
  async prune(head: bigint): Promise<void> {
    const headSeg = this.segmentOf(head);
    let segs: bigint[] = [];
    if (head % SPAN === 0n) {
      segs = await this.listSegments();
    } else {
      for (let seg = this.segmentOf((await this.readFloor()) + 1n); seg < headSeg - 1n; seg++) segs.push(seg);
    }
    const minPos = head - BigInt(this.retention.maxEvents);
    const oldest = Date.now() - this.retention.maxAgeMs;
    const drop: bigint[] = [];
    for (const seg of segs) {
      if (seg >= headSeg - 1n) break;
      const end = (seg + 1n) * this.seg - 1n;
      let old = end <= minPos;
      if (!old) {
        const last = await this.segment(seg).find({}).sort({ _id: -1 }).limit(1).toArray();
        old = !last[0] || new Date(last[0].at).getTime() < oldest;
      }
      if (!old) break;
      drop.push(seg);
    }
    if (!drop.length) return;
    const floor = (drop[drop.length - 1]! + 1n) * this.seg - 1n;
    await this.meta.updateOne({ _id: `floor:${this.key}` }, { $max: { n: Number(floor) } }, { upsert: true });
    for (const seg of drop) await this.segment(seg).drop().catch(() => undefined);
  }

  // ----- reader side ------------------------------------------------------------------------

  async read(after: bigint, limit: number, maxBytes = Infinity): Promise<LogRead> {
    const events: ChangeEvent[] = [];
    let bytes = 0;
    let more = false;
    // Aborted entries and filled holes count towards `limit` and move `through` on, so a run of
    // them longer than a read is walked past, not read again and again.
    const through = await this.walk(after, limit, (d) => {
      if (d.s !== 'c') return false;
      events.push(toEvent(d));
      bytes += encodedSize(d.o) + (d.b !== undefined ? encodedSize(d.b) : 0);
      return (more = bytes >= maxBytes);
    });
    if (!events.length && after < (await this.floor())) throw expired(String(after));
    return { events, through, bytes, more: more && through - after < BigInt(limit), settled: through >= this.known };
  }

  /**
   * A head hint read by the store's change-hint poller (index.ts): a position known to exist.
   * True when it is beyond what this log has read, i.e. the feed has something to read.
   */
  noteHint(n: bigint): boolean {
    if (n > this.known) this.known = n;
    return n > this.resolved;
  }

  async head(): Promise<bigint> {
    // Start near the newest known position: entries far behind it are resolved (a crashed
    // writer's pending entry is repaired within seconds by whichever reader meets it).
    let from = this.resolved;
    const hint = await this.hint();
    const top = hint > this.known ? hint : this.known;
    const near = top - (top % SPAN) - SPAN - 1n;
    if (near > from) from = near;
    const floor = await this.floor();
    if (floor > from) from = floor;
    let last = from;
    for (;;) {
      const before = last;
      last = await this.walk(last, 2000, () => false);
      if (last === before) return last;
    }
  }

  /**
   * The highest position present in the log, pending entries included. A writer inserts its
   * pending entry before it writes the object (step 1 before step 2), so every object write a
   * read may already see has a position at or below this one, even while `head()` still stops
   * at its unconfirmed entry.
   */
  async horizon(): Promise<bigint> {
    const hint = await this.hint();
    let from = hint > this.known ? hint : this.known;
    if (this.resolved > from) from = this.resolved;
    // The hint lags (it is moved at most every HINT_MS, without waiting): look further in the
    // log itself. Segments fill in order, so the walk ends at the first empty one.
    return this.top(from);
  }

  async check(from: bigint): Promise<void> {
    const rv = String(from);
    if (from < (await this.floor(true))) throw expired(rv);
    if (from === 0n || from <= this.known || from <= this.resolved) return;
    const hint = await this.hint();
    // Both are positions known to exist: later checks at or below them need no round trip.
    if (hint > this.known) this.known = hint;
    if (from <= hint) return;
    const at = await guard(() => this.coll(from).findOne({ _id: pad(from) }, { projection: { _id: 1 } }));
    if (!at) throw expired(rv, 'is not a position of this change feed');
    if (from > this.known) this.known = from;
  }

  /**
   * Visits resolved entries after `after` in position order (at most `limit`), stopping at the
   * first hole or unresolvable pending entry, or after an entry `visit` answers true for (a
   * budget reached). Returns the last resolved position. Entries come from a cursor, so those
   * after a stop are not fetched beyond the current batch (a server sends at most 16 MiB per
   * batch).
   */
  private async walk(after: bigint, limit: number, visit: (d: FeedDoc) => boolean): Promise<bigint> {
    let cur = after;
    let n = 0;
    while (n < limit) {
      const next = cur + 1n;
      const cursor = this.coll(next)
        .find({ _id: { $gte: pad(next) } })
        .sort({ _id: 1 })
        .limit(limit - n);
      let seen = 0;
      let stopped = false;
      let refill = false;
      try {
        await guard(async () => {
          for await (const d of cursor) {
            seen++;
            const p = cur + 1n;
            // Every position seen exists: a read that stops before it is not settled.
            const at = BigInt(d._id);
            if (at > this.known) this.known = at;
            if (d._id !== pad(p)) {
              // A position not yet visible below one that is: its insert is in flight (wait), or
              // its writer died before inserting it (fill it as aborted after HOLE_MS; a late
              // writer then gets a duplicate key and takes another position).
              if (!(await this.fillHole(p))) {
                stopped = true;
                break;
              }
              cur = p;
              n++;
              if (cur > this.resolved) this.resolved = cur;
              // re-read from here: the document in hand belongs to a later position
              refill = true;
              break;
            }
            if (d.s === 'p' && !(await this.repair(d))) {
              stopped = true;
              break;
            }
            const budgetReached = visit(d);
            cur = p;
            n++;
            if (cur > this.resolved) this.resolved = cur;
            if (cur > this.known) this.known = cur;
            if (budgetReached) {
              stopped = true;
              break;
            }
          }
        });
      } finally {
        await cursor.close().catch(() => undefined);
      }
      if (refill) continue;
      if (seen === 0 && !stopped && (await this.holeAcrossSegments(next))) {
        cur = next;
        n++;
        continue;
      }
      // Continue into the next segment only when this one was read to its last position.
      if (stopped || seen === 0 || (cur + 1n) % this.seg !== 0n) break;
    }
    return cur;
  }

  private boundaryCheckAt = 0;

  /**
   * Nothing at `next` or after it in its segment: a hole when the next segment has entries
   * (checked at most once a second). True when `next` was filled and reading can go on.
   */
  private async holeAcrossSegments(next: bigint): Promise<boolean> {
    if (Date.now() - this.boundaryCheckAt < 1000) return false;
    this.boundaryCheckAt = Date.now();
    const later = await guard(() => this.segment(this.segmentOf(next) + 1n).findOne({}, { projection: { _id: 1 } }));
    if (!later) return false;
    if (!(await this.fillHole(next))) return false;
    if (next > this.resolved) this.resolved = next;
    return true;
  }

  /** Fills a long-missing position as aborted; true when it is now resolved. */
  private async fillHole(p: bigint): Promise<boolean> {
    const id = pad(p);
    const first = this.holes.get(id);
    const now = Date.now();
    if (first === undefined) {
      if (this.holes.size > 1000) this.holes.clear();
      this.holes.set(id, now);
      return false;
    }
    if (now - first < HOLE_MS) return false;
    try {
      await guard(() =>
        this.coll(p).insertOne({ _id: id, s: 'a', t: 'ADDED', n: '', o: '', g: '', w: 'hole', at: new Date() }),
      );
    } catch (e) {
      if (!isDuplicateKey(e)) throw e;
      return false; // its writer inserted it after all: read it next time
    }
    this.holes.delete(id);
    return true;
  }

  /**
   * A pending entry: leaves it alone while its writer is alive; otherwise decides whether the
   * write happened and records the answer. Mutates `d.s`; returns true when resolved.
   */
  private async repair(d: FeedDoc): Promise<boolean> {
    if (d.w === this.writer.id) {
      const u = this.writer.unresolved.get(FeedWriter.key(this.coll(BigInt(d._id)), d._id));
      if (!u) return false; // our own write in progress
      d.s = u.s;
      return true;
    }
    if (!(await this.writerDead(d.w))) return false;
    const fresh = await guard(() => this.coll(BigInt(d._id)).findOne({ _id: d._id }));
    if (!fresh) return false;
    if (fresh.s !== 'p') {
      d.s = fresh.s;
      return true;
    }
    const s = (await this.happened(d)) ? 'c' : 'a';
    await guard(() => this.coll(BigInt(d._id)).updateOne({ _id: d._id, s: 'p' }, { $set: { s } }));
    d.s = s;
    return true;
  }

  private async writerDead(w: string): Promise<boolean> {
    const lease = await guard(() => this.meta.findOne({ _id: `writer:${w}` }));
    if (!lease?.at) return true;
    const at = new Date(lease.at).getTime();
    const seen = this.leases.get(w);
    const now = Date.now();
    if (!seen || seen.at !== at) {
      this.leases.set(w, { at, since: now });
      return false;
    }
    return now - seen.since > LEASE_DEAD_MS;
  }

  /** Did the object write of a dead writer's pending entry happen? */
  private async happened(d: FeedDoc): Promise<boolean> {
    // Layout 1 documents (not yet upgraded, layout.ts) have `f`/`g` at the top.
    const doc = await guard(() => this.objects.findOne({ _id: d.n }, { projection: { [SVC.f]: 1, [SVC.g]: 1, f: 1, g: 1 } }));
    const obj = doc && (doc._svc ? { f: doc._svc.f, g: doc._svc.g } : { f: doc.f as string | undefined, g: doc.g as string | undefined });
    if (obj?.f === d._id) return true;
    const p = BigInt(d._id);
    // A later write replaced the state this entry produced.
    if (await this.findEntry({ n: d.n, pf: d._id, s: { $ne: 'a' } }, p, p + 4n * SPAN)) return true;
    if (d.t === 'DELETED' && (!obj || obj.g !== d.g)) {
      // Gone: deleted by this entry unless another delete of the same state took it.
      const other = await this.findEntry({ n: d.n, pf: d.pf ?? null, t: 'DELETED', s: { $ne: 'a' }, _id: { $ne: d._id } }, p - 2n * SPAN, p + 4n * SPAN);
      return !other;
    }
    return false;
  }

  private async findEntry(filter: Record<string, unknown>, from: bigint, to: bigint): Promise<boolean> {
    const start = from < 0n ? 0n : this.segmentOf(from);
    for (let seg = start; seg <= this.segmentOf(to); seg++) {
      if (await guard(() => this.segment(seg).findOne(filter as never, { projection: { _id: 1 } }))) return true;
    }
    return false;
  }
}

/**
 * A value read from the database by a query that starts after `get()` is called. Callers that
 * arrive while a query runs share the next one (started when the current one ends), so a burst
 * of callers costs at most two round trips and each still sees the state at its call or later.
 */
class Fresh<T> {
  private now: Promise<T> | undefined;
  private next: Promise<T> | undefined;
  constructor(private readonly query: () => Promise<T>) {}

  get(): Promise<T> {
    if (!this.now) {
      const q = this.query().finally(() => {
        if (this.now === q) this.now = undefined;
      });
      this.now = q;
      return q;
    }
    this.next ??= this.now
      .catch(() => undefined)
      .then(() => {
        this.next = undefined;
        return this.get();
      });
    return this.next;
  }
}

function toEvent(d: FeedDoc): ChangeEvent {
  const object = decodeObject(d.o);
  const e: ChangeEvent = { type: d.t, object, resourceVersion: BigInt(d._id).toString() };
  if (d.t === 'DELETED') e.previous = decodeObject(d.o);
  else if (d.b !== undefined) e.previous = decodeObject(d.b);
  return e;
}
