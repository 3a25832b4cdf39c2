/**
 * The change feed's layout, shared by its roles (feed.ts has the protocol): entry documents in
 * segment collections of a fixed number of positions, the size recorded per feed
 * (`seg:<key>` in `_svc_feed`), the highest position known to exist, and the head hint.
 */
import type { Collection, Db } from 'mongodb';
import { StoreError } from '../errors.js';
import type { WatchEventType } from '../types.js';
import type { EncodedObject } from './document.js';
import type { TimeBounds } from './bounded.js';
import { guard, isDuplicateKey } from './errors.js';

export const FEED_META = '_svc_feed';
/** Positions per segment collection (default). */
export const SEGMENT = 1024n;
/**
 * Spans of positions the feed looks back or ahead by (head(), the repair check, retention
 * passes) are this long whatever the segment size: they are about time and write rates, not
 * about collections.
 */
export const SPAN = 1024n;
/** Positions per segment on FerretDB (see feed.ts). */
export const FERRET_SEGMENT = 64n;

export interface FeedDoc {
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

export interface MetaDoc {
  _id: string;
  n?: number;
  at?: Date;
}

export const pad = (p: bigint): string => p.toString().padStart(20, '0');

/** One per feed: where its entries are, and what is known of its positions. */
export class FeedSegments {
  readonly meta: Collection<MetaDoc>;
  /** The highest position known to exist. */
  known = 0n;

  constructor(
    private readonly db: Db,
    readonly key: string,
    private readonly base: string,
    /** The abort signals of the writer side's operations (bounded.ts), and their time bound. */
    private readonly bounds: TimeBounds,
    private readonly opMs?: number,
  ) {
    this.meta = db.collection<MetaDoc>(FEED_META);
  }

  /** Positions per segment: recorded per feed, settled by layout() before any use. */
  seg = SEGMENT;
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
  async listSegments(): Promise<bigint[]> {
    const prefix = `${this.base}.`;
    const names = await this.db.listCollections({}, { nameOnly: true }).toArray();
    return names
      .map((c) => c.name)
      .filter((n) => n.startsWith(prefix) && /^\d+$/.test(n.slice(prefix.length)))
      .map((n) => BigInt(n.slice(prefix.length)))
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  }

  segmentOf(p: bigint): bigint {
    return p / this.seg;
  }

  segment(seg: bigint): Collection<FeedDoc> {
    return this.db.collection<FeedDoc>(`${this.base}.${seg}`);
  }

  coll(p: bigint): Collection<FeedDoc> {
    return this.segment(this.segmentOf(p));
  }

  /** The highest position present in the log, looking from `from`'s segment on. */
  async top(from: bigint): Promise<bigint> {
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
  async hint(writing = false): Promise<bigint> {
    if (!writing) return this.freshHint.get();
    const h = await guard(() => this.meta.findOne({ _id: `head:${this.key}` }, this.bounds.within(this.opMs)));
    return h?.n ? BigInt(h.n) : 0n;
  }

  private readonly freshHint = new Fresh(async () => {
    const h = await guard(() => this.meta.findOne({ _id: `head:${this.key}` }));
    return h?.n ? BigInt(h.n) : 0n;
  });
}

/**
 * A value read from the database by a query that starts after `get()` is called. Callers that
 * arrive while a query runs share the next one (started when the current one ends), so a burst
 * of callers costs at most two round trips and each still sees the state at its call or later.
 */
export class Fresh<T> {
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
