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
 * and not after it with the object carrying a pending stamp (which would make it 2). Positions are given by the insert of an `_id`; written after the object,
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
 *
 * The roles, one file each: the layout of segments and positions (feed-segments.ts), the writer
 * lease and batched outcomes (feed-lease.ts), the entries of the writer side and their doubt
 * (feed-entries.ts), the reader and its repair (feed-reader.ts), and retention (feed-retention.ts).
 * MongoChangeLog below is one feed's reader with its writer side.
 */
import type { Collection, Db } from 'mongodb';
import type { ChangeLog, FeedRetention } from '../feed/index.js';
import type { StoredDoc } from './document.js';
import { FeedEntries, type ChangeIntent, type Settle } from './feed-entries.js';
import type { FeedWriter } from './feed-lease.js';
import { FeedReader } from './feed-reader.js';
import { Retention } from './feed-retention.js';
import { FeedSegments } from './feed-segments.js';

export { FEED_META, FERRET_SEGMENT, pad, SEGMENT } from './feed-segments.js';
export { FeedWriter, LEASE_STALE } from './feed-lease.js';
export type { ChangeIntent, Settle } from './feed-entries.js';

/**
 * One model's change feed: the reader side (FeedReader, the ChangeLog the shared feed layer
 * polls) with the writer side (FeedEntries) over one layout.
 */
export class MongoChangeLog extends FeedReader implements ChangeLog {
  private readonly entries: FeedEntries;

  constructor(
    db: Db,
    key: string,
    base: string,
    objects: Collection<StoredDoc>,
    writer: FeedWriter,
    retention: FeedRetention,
    /** Time bound of the writer side's operations, which run inside requests (bounded.ts). */
    opMs?: number,
  ) {
    const segs = new FeedSegments(db, key, base, writer.bounds, opMs);
    const kept = new Retention(segs, retention);
    super(segs, writer, objects, kept);
    this.entries = new FeedEntries(segs, writer, this, kept, opMs);
  }

  /** Settles the segment size of this feed before anything reads or writes it (feed-segments.ts). */
  layout(preferred: bigint): Promise<void> {
    return this.segs.layout(preferred);
  }

  // ----- writer side (feed-entries.ts) -----

  /** Step 1: allocates a position for the change and records it as pending. */
  begin(c: ChangeIntent): Promise<string> {
    return this.entries.begin(c);
  }

  /** Step 3: the object write succeeded (`c`) or did not happen (`a`). */
  finish(position: string, s: 'c' | 'a'): Promise<void> {
    return this.entries.finish(position, s);
  }

  /** Step 3 after the object write threw: true when the entry was aborted (the write certainly did not happen). */
  failed(position: string, err: unknown, settle?: Settle): Promise<boolean> {
    return this.entries.failed(position, err, settle);
  }

  /** Resolves once this process's lease is fresh (renewing it if needed). */
  ready(): Promise<void> {
    return this.entries.ready();
  }

  /** Whether this process's lease allows writing the object now (step 2 guard). */
  mayWrite(): boolean {
    return this.entries.mayWrite();
  }

  /** Whether some write of this log is still in doubt (the writer keeps its lease meanwhile). */
  get doubting(): boolean {
    return this.entries.doubting;
  }

  /** Called when a doubtful entry was settled (the feed can move on). */
  set onSettled(f: (() => void) | undefined) {
    this.entries.onSettled = f;
  }

  /** Store closing: stops settling doubtful entries (readers repair them as a dead writer's). */
  close(): void {
    this.entries.close();
  }
}
