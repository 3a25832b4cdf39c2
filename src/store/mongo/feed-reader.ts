/**
 * The reader side of the change feed, and its repair (feed.ts has the protocol): positions are
 * walked in order and a read stops at the first hole or pending entry. A position missing for
 * HOLE_MS below existing ones is filled as aborted; a pending entry whose writer's lease stopped
 * moving (feed-lease.ts) is settled from the object (`happened`), which the writer side also
 * asks about its own entries in doubt (feed-entries.ts).
 */
import type { Collection } from 'mongodb';
import { expired, type LogRead } from '../feed/index.js';
import type { ChangeEvent } from '../types.js';
import { decodeObject, encodedSize, SVC, type StoredDoc } from './document.js';
import { guard, isDuplicateKey } from './errors.js';
import { FeedWriter, LEASE_DEAD_MS } from './feed-lease.js';
import type { Retention } from './feed-retention.js';
import { pad, SPAN, type FeedDoc, type FeedSegments } from './feed-segments.js';

/** A missing position below existing ones for this long is filled as aborted (its writer gave up or died). */
const HOLE_MS = 3000;

export class FeedReader {
  /** Every position at or below this is resolved (read by read()/head()). */
  resolved = 0n;
  /** Missing positions seen below existing ones: when first seen (local clock). */
  private readonly holes = new Map<string, number>();
  /** Lease observations of other writers: value last seen and when (local clock). */
  private readonly leases = new Map<string, { at: number; since: number }>();

  constructor(
    protected readonly segs: FeedSegments,
    private readonly writer: FeedWriter,
    private readonly objects: Collection<StoredDoc>,
    private readonly retention: Retention,
  ) {}

  async read(after: bigint, limit: number, maxBytes = Infinity): Promise<LogRead> {
    const events: ChangeEvent[] = [];
    let bytes = 0;
    let more = false;
    // Aborted entries and filled holes count towards `limit` and move `through` on, so a run of
    // them longer than a read is walked past, not read again and again.
    const { through } = await this.walk(after, limit, (d) => {
      if (d.s !== 'c') return false;
      events.push(toEvent(d));
      bytes += encodedSize(d.o) + (d.b !== undefined ? encodedSize(d.b) : 0);
      return (more = bytes >= maxBytes);
    });
    if (!events.length && after < (await this.retention.floor())) throw expired(String(after));
    return { events, through, bytes, more: more && through - after < BigInt(limit), settled: through >= this.segs.known };
  }

  /**
   * A head hint read by the store's change-hint poller (index.ts): a position known to exist.
   * True when it is beyond what this log has read, i.e. the feed has something to read.
   */
  noteHint(n: bigint): boolean {
    if (n > this.segs.known) this.segs.known = n;
    return n > this.resolved;
  }

  async head(): Promise<bigint> {
    // Start near the newest known position: entries far behind it are resolved (a crashed
    // writer's pending entry is repaired within seconds by whichever reader meets it).
    let from = this.resolved;
    const hint = await this.segs.hint();
    const top = hint > this.segs.known ? hint : this.segs.known;
    const near = top - (top % SPAN) - SPAN - 1n;
    if (near > from) from = near;
    let floor = await this.retention.floor();
    for (;;) {
      const start = floor > from ? floor : from;
      let last = start;
      let seen = 0;
      for (;;) {
        const before = last;
        const walked = await this.walk(last, 2000, () => false);
        last = walked.through;
        seen += walked.seen;
        if (last === before) break;
      }
      // Nothing at all after `start` while later positions exist: retention may have dropped the
      // segments there since the floor was read (another process's prune, or a cached floor), and
      // `start` is no position to watch from. Read the floor again and walk from it.
      if (seen > 0 || last >= top) return last;
      const fresh = await this.retention.floor(true);
      if (fresh <= start) return last;
      floor = fresh;
    }
  }

  /**
   * The highest position present in the log, pending entries included. A writer inserts its
   * pending entry before it writes the object (step 1 before step 2), so every object write a
   * read may already see has a position at or below this one, even while `head()` still stops
   * at its unconfirmed entry.
   */
  async horizon(): Promise<bigint> {
    const hint = await this.segs.hint();
    let from = hint > this.segs.known ? hint : this.segs.known;
    if (this.resolved > from) from = this.resolved;
    // The hint lags (it is moved at most every HINT_MS, without waiting): look further in the
    // log itself. Segments fill in order, so the walk ends at the first empty one.
    return this.segs.top(from);
  }

  async check(from: bigint): Promise<void> {
    const rv = String(from);
    if (from < (await this.retention.floor(true))) throw expired(rv);
    if (from === 0n || from <= this.segs.known || from <= this.resolved) return;
    const hint = await this.segs.hint();
    // Both are positions known to exist: later checks at or below them need no round trip.
    if (hint > this.segs.known) this.segs.known = hint;
    if (from <= hint) return;
    const at = await guard(() => this.segs.coll(from).findOne({ _id: pad(from) }, { projection: { _id: 1 } }));
    if (!at) throw expired(rv, 'is not a position of this change feed');
    if (from > this.segs.known) this.segs.known = from;
  }

  /**
   * Visits resolved entries after `after` in position order (at most `limit`), stopping at the
   * first hole or unresolvable pending entry, or after an entry `visit` answers true for (a
   * budget reached). Returns the last resolved position. Entries come from a cursor, so those
   * after a stop are not fetched beyond the current batch (a server sends at most 16 MiB per
   * batch).
   */
  private async walk(after: bigint, limit: number, visit: (d: FeedDoc) => boolean): Promise<{ through: bigint; seen: number }> {
    let cur = after;
    let n = 0;
    let total = 0;
    while (n < limit) {
      const next = cur + 1n;
      const cursor = this.segs.coll(next)
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
            if (at > this.segs.known) this.segs.known = at;
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
            if (cur > this.segs.known) this.segs.known = cur;
            if (budgetReached) {
              stopped = true;
              break;
            }
          }
        });
      } finally {
        await cursor.close().catch(() => undefined);
      }
      total += seen;
      if (refill) continue;
      if (seen === 0 && !stopped && (await this.holeAcrossSegments(next))) {
        cur = next;
        n++;
        continue;
      }
      // Continue into the next segment only when this one was read to its last position.
      if (stopped || seen === 0 || (cur + 1n) % this.segs.seg !== 0n) break;
    }
    return { through: cur, seen: total };
  }

  private boundaryCheckAt = 0;

  /**
   * Nothing at `next` or after it in its segment: a hole when the next segment has entries
   * (checked at most once a second). True when `next` was filled and reading can go on.
   */
  private async holeAcrossSegments(next: bigint): Promise<boolean> {
    if (Date.now() - this.boundaryCheckAt < 1000) return false;
    this.boundaryCheckAt = Date.now();
    const later = await guard(() => this.segs.segment(this.segs.segmentOf(next) + 1n).findOne({}, { projection: { _id: 1 } }));
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
        this.segs.coll(p).insertOne({ _id: id, s: 'a', t: 'ADDED', n: '', o: '', g: '', w: 'hole', at: new Date() }),
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
      const u = this.writer.unresolved.get(FeedWriter.key(this.segs.coll(BigInt(d._id)), d._id));
      if (!u) return false; // our own write in progress
      d.s = u.s;
      return true;
    }
    if (!(await this.writerDead(d.w))) return false;
    const fresh = await guard(() => this.segs.coll(BigInt(d._id)).findOne({ _id: d._id }));
    if (!fresh) return false;
    if (fresh.s !== 'p') {
      d.s = fresh.s;
      return true;
    }
    const s = (await this.happened(d)) ? 'c' : 'a';
    await guard(() => this.segs.coll(BigInt(d._id)).updateOne({ _id: d._id, s: 'p' }, { $set: { s } }));
    d.s = s;
    return true;
  }

  private async writerDead(w: string): Promise<boolean> {
    const lease = await guard(() => this.segs.meta.findOne({ _id: `writer:${w}` }));
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
  async happened(d: FeedDoc): Promise<boolean> {
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
    const start = from < 0n ? 0n : this.segs.segmentOf(from);
    for (let seg = start; seg <= this.segs.segmentOf(to); seg++) {
      if (await guard(() => this.segs.segment(seg).findOne(filter as never, { projection: { _id: 1 } }))) return true;
    }
    return false;
  }
}

function toEvent(d: FeedDoc): ChangeEvent {
  const object = decodeObject(d.o);
  const e: ChangeEvent = { type: d.t, object, resourceVersion: BigInt(d._id).toString() };
  if (d.t === 'DELETED') e.previous = decodeObject(d.o);
  else if (d.b !== undefined) e.previous = decodeObject(d.b);
  return e;
}
