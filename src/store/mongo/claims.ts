/**
 * Unique indexes, enforced through a claims collection (one per model).
 *
 * Why not a unique index on the object collection: MongoDB's unique multikey index rejects two
 * documents sharing any array element, but FerretDB 1.24 (SQLite) indexes the JSON text of the
 * whole array, so `["a","b"]` and `["b","c"]` do not collide there; it also never reports which
 * index a duplicate hit. A claim is one document per taken value,
 *
 *   { _id: JSON ["<index>", "<value>"], x: index, val: value,
 *     n: owner name, g: owner incarnation, v: owner version that (re)claimed it, t: write token, at }
 *
 * and `_id` uniqueness is enforced by every backend. Protocol (no transactions needed):
 *  1. Before writing an object, claim each of its unique values (insert; when the claim exists
 *     and is ours, refresh it: `v` = max(v, new version), new `t`).
 *  2. Write the object (insertOne / CAS replaceOne / deleteOne).
 *  3. Release claims the write made unnecessary: values dropped by an update (only if no later
 *     write of ours re-claimed them: `v <= written version`), all values of a removed object,
 *     or the claims inserted in step 1 when the write failed (only if untouched since: `t`).
 *
 * A crash between the steps leaves a claim whose owner does not hold the value. Such a claim is
 * repaired by the next writer that wants the value: it is stale when the owner (same
 * incarnation) is at a version >= the claim's `v` without the value (the claiming write either
 * failed or was superseded), or, when that cannot be told (owner missing / older), once the
 * claim is older than GRACE_MS (a write in progress finishes well within it), or at once when its
 * claiming process is gone: each claim names its writer (`w`), whose feed lease (feed.ts) is
 * fresh from before it claims until its write is settled, so a lease that stopped moving for
 * LEASE_DEAD_MS means a killed process whose write never completes (such values
 * stayed blocked for GRACE_MS after a restart). Deletions are
 * conditional on `t`, so a claim that was refreshed meanwhile is never removed.
 *
 * On FerretDB conditional deletes/updates are not atomic (cas.ts: it reads the match, then
 * deletes or writes by `_id`), so a deletion can remove a claim refreshed between its two steps.
 * Two writers repairing the same stale claim at the same moment could remove each other's fresh
 * claim; and the release of a value one update dropped (step 3) can overlap the next update of
 * the same object claiming it back (its step 1 comes before its compare-and-set marker), leaving
 * the value held without a claim. Both need the two commands to interleave within a few
 * milliseconds on one value; no single FerretDB command closes them (no transactions, no atomic
 * conditional delete). MongoDB is not affected.
 */
import { randomBytes } from 'node:crypto';
import { MongoBulkWriteError, type Collection } from 'mongodb';
import { enc, SVC, type StoredDoc } from './document.js';
import { isDuplicateKey } from './errors.js';
import { StoreError } from '../errors.js';

export const GRACE_MS = 30_000;

export interface ClaimDoc {
  _id: string;
  x: string;
  val: string;
  n: string;
  g: string;
  v: number;
  t: string;
  at: Date;
  /** The claiming process (its feed lease, `writer:<w>` in `_svc_feed`); absent on old claims. */
  w?: string;
}

/** What Claims needs to know about writers (their feed leases, feed.ts FeedWriter). */
export interface ClaimWriters {
  readonly id: string;
  /** True when writer `w` is gone: its lease is missing or stopped moving. */
  gone(w: string): Promise<boolean>;
}

export interface UniqueValue {
  index: string;
  value: string;
}

/** A claim this write inserted: released (if still untouched) when the write fails. */
export type Acquired = Pick<ClaimDoc, '_id' | 't'>;

export const claimId = (index: string, value: string): string => JSON.stringify([index, value]);
const token = () => randomBytes(8).toString('hex');

export class Claims {
  constructor(
    private readonly claims: Collection<ClaimDoc>,
    private readonly objects: Collection<StoredDoc>,
    private readonly writers?: ClaimWriters,
  ) {}

  /**
   * Claims `values` for object `name` (incarnation `g`) at `version`. Returns the claims it
   * inserted. Throws UniqueViolation (after releasing what it inserted) when a value is taken.
   */
  async acquire(name: string, g: string, version: number, values: UniqueValue[]): Promise<Acquired[]> {
    if (values.length === 0) return [];
    const docs = values.map((u) => this.claimDoc(u, name, g, version));
    const acquired: Acquired[] = [];
    try {
      // Fast path: one insertMany; only values already claimed go through the slow path.
      const taken = await this.insertMany(docs);
      for (const d of docs) if (!taken.has(d._id)) acquired.push({ _id: d._id, t: d.t });
      for (const d of docs) {
        if (!taken.has(d._id)) continue;
        const got = await this.acquireOne(d);
        if (got) acquired.push(got);
      }
      return acquired;
    } catch (e) {
      await this.releaseAcquired(acquired);
      throw e;
    }
  }

  /** Undoes `acquire` after a failed write. */
  async releaseAcquired(acquired: Acquired[]): Promise<void> {
    for (const a of acquired) await this.claims.deleteOne({ _id: a._id, t: a.t });
  }

  /**
   * Releases values an object of incarnation `g` no longer holds after its write at `version`
   * committed. `version` undefined (a removal): whatever their version.
   */
  async release(name: string, g: string, version: number | undefined, values: UniqueValue[]): Promise<void> {
    for (const u of values) {
      const filter = { _id: claimId(u.index, u.value), n: name, g };
      await this.claims.deleteOne(version === undefined ? filter : { ...filter, v: { $lte: version } });
    }
  }

  /** Drops every claim of an index (it was removed, stopped being unique, or is being rebuilt). */
  async dropIndex(index: string): Promise<void> {
    await this.claims.deleteMany({ x: index });
  }

  private claimDoc(u: UniqueValue, n: string, g: string, v: number): ClaimDoc {
    return { _id: claimId(u.index, u.value), x: u.index, val: u.value, n, g, v, t: token(), at: new Date(), w: this.writers?.id };
  }

  /** Inserts claims; returns the ids that already existed. */
  private async insertMany(docs: ClaimDoc[]): Promise<Set<string>> {
    try {
      await this.claims.insertMany(docs, { ordered: false });
      return new Set();
    } catch (e) {
      if (!(e instanceof MongoBulkWriteError)) throw e;
      const errors = (Array.isArray(e.writeErrors) ? e.writeErrors : [e.writeErrors]).filter((w) => w !== undefined);
      // No write errors: the batch failed as a whole (network, timeout), nothing is known taken.
      if (!errors.length || errors.some((w) => w.code !== 11000)) throw e;
      return new Set(errors.map((w) => docs[w.index]!._id));
    }
  }

  /** Slow path for one value: insert, keep our own claim, repair a stale one, or fail. */
  private async acquireOne(want: ClaimDoc): Promise<Acquired | null> {
    for (let attempt = 0; attempt < 10; attempt++) {
      const fresh = { ...want, t: token(), at: new Date() };
      try {
        await this.claims.insertOne(fresh);
        return { _id: fresh._id, t: fresh.t };
      } catch (e) {
        if (!isDuplicateKey(e)) throw e;
      }
      const c = await this.claims.findOne({ _id: want._id });
      if (!c) continue; // released meanwhile: insert again
      if (c.n === want.n && c.g === want.g) {
        // Ours already (the object keeps this value): refresh so no one takes it as stale.
        const r = await this.claims.updateOne(
          { _id: c._id, t: c.t },
          { $max: { v: want.v }, $set: { t: token(), at: new Date() } },
        );
        if (r.matchedCount === 1) return null;
        continue;
      }
      if (await this.isStale(c)) {
        await this.claims.deleteOne({ _id: c._id, t: c.t });
        continue;
      }
      throw new StoreError(
        'UniqueViolation',
        `value "${want.val}" of unique index "${want.x}" is already used by another object`,
        want.x,
      );
    }
    throw new StoreError('Conflict', `could not claim value "${want.val}" of index "${want.x}": too much contention`);
  }

  private async isStale(c: ClaimDoc): Promise<boolean> {
    const field = enc(c.x);
    const owner = (await this.objects.findOne(
      { _id: c.n },
      { projection: { [SVC.g]: 1, [SVC.v]: 1, [`${SVC.i}.${field}`]: 1 } },
    ))?._svc;
    if (owner && owner.g === c.g) {
      if (owner.i?.[field]?.includes(c.val)) return false; // held: a real conflict
      if (owner.v >= c.v) return true; // the claiming write failed or was superseded
    }
    // Not held, and its writer is gone (killed: its lease stopped moving; a writer renews it
    // from before it claims until its write is settled), so its write never completes: free
    // again within LEASE_DEAD_MS of the kill rather than GRACE_MS.
    if (c.w && this.writers && c.w !== this.writers.id && (await this.writers.gone(c.w))) return true;
    return Date.now() - new Date(c.at).getTime() > GRACE_MS;
  }
}
