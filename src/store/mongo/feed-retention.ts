/**
 * Retention of the change feed (feed.ts has the protocol): positions at or below the floor
 * (`floor:<key>` in `_svc_feed`) are gone; `prune` drops whole segments beyond the retention
 * (by count and by age) and moves the floor. Readers ask for the floor to tell an expired
 * position (410) from a live one.
 */
import type { FeedRetention } from '../feed/index.js';
import { guard } from './errors.js';
import { Fresh, SPAN, type FeedSegments } from './feed-segments.js';

export class Retention {
  private floorCache = { n: 0n, at: 0 };

  constructor(
    private readonly segs: FeedSegments,
    private readonly retention: FeedRetention,
  ) {}

  /** The floor: cached for a second unless `fresh`. */
  async floor(fresh = false): Promise<bigint> {
    if (fresh || Date.now() - this.floorCache.at > 1000) return this.readFloor();
    return this.floorCache.n;
  }

  /**
   * The floor read from the database by a query that starts after the call (see Fresh): a
   * thousand watchers starting at once cost two round trips, not a thousand (each would take a
   * pooled connection, and the driver's pool would grow).
   */
  private readonly freshFloor = new Fresh(async () => {
    const f = await guard(() => this.segs.meta.findOne({ _id: `floor:${this.segs.key}` }));
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
    const headSeg = this.segs.segmentOf(head);
    let segs: bigint[] = [];
    if (head % SPAN === 0n) {
      segs = await this.segs.listSegments();
    } else {
      for (let seg = this.segs.segmentOf((await this.readFloor()) + 1n); seg < headSeg - 1n; seg++) segs.push(seg);
    }
    const minPos = head - BigInt(this.retention.maxEvents);
    const oldest = Date.now() - this.retention.maxAgeMs;
    const drop: bigint[] = [];
    for (const seg of segs) {
      if (seg >= headSeg - 1n) break;
      const end = (seg + 1n) * this.segs.seg - 1n;
      let old = end <= minPos;
      if (!old) {
        const last = await this.segs.segment(seg).find({}).sort({ _id: -1 }).limit(1).toArray();
        old = !last[0] || new Date(last[0].at).getTime() < oldest;
      }
      if (!old) break;
      drop.push(seg);
    }
    if (!drop.length) return;
    const floor = (drop[drop.length - 1]! + 1n) * this.segs.seg - 1n;
    await this.segs.meta.updateOne({ _id: `floor:${this.segs.key}` }, { $max: { n: Number(floor) } }, { upsert: true });
    // This process's readers see the new floor at once, not after the cache's second: a head()
    // started from the old one would walk into the segments dropped below.
    if (floor > this.floorCache.n) this.floorCache = { n: floor, at: Date.now() };
    for (const seg of drop) await this.segs.segment(seg).drop().catch(() => undefined);
  }
}
