/**
 * One object write (create, update or remove) through the write protocol, step by step:
 *
 *   claim   the unique values it takes (claims.ts), with this process's lease fresh first;
 *   enter   its pending feed entry (feed-entries.ts, step 1), whose position the object carries;
 *   insert | replace | delete   the object write itself: an insert of a unique `_id`, or a
 *           compare-and-set on (incarnation, version) (cas.ts; on FerretDB under a marker and as
 *           a plain command, once.ts), never sent under a stale lease (feed.ts, step 2);
 *   commit  the entry confirmed, watchers woken, claims the write made unnecessary released.
 *
 * Whatever the step, a write ends in one of three ways:
 *  - done: `commit`;
 *  - certainly not done (refused, or failed before it was sent): `undo`, the one place that
 *    takes back what the write holds, in this order: its marker, its entry (aborted), the
 *    claims it inserted;
 *  - in doubt (sent, no answer): the entry stays pending and the feed settles it (feed-entries.ts,
 *    `doubt`): the write is sent again where the compare-and-set is atomic (MongoDB), otherwise
 *    the feed waits DOUBT_MS for it to show; the claims stay while the write may have happened,
 *    and the marker is released once the entry is settled.
 * Each method throws what its step threw, after doing its part of that.
 */
import type { Collection, Filter } from 'mongodb';
import type { Cas } from './cas.js';
import type { Acquired, Claims, UniqueValue } from './claims.js';
import { casFilter, SVC, type StoredDoc } from './document.js';
import { isDuplicateKey } from './errors.js';
import { LEASE_STALE, type ChangeIntent, type MongoChangeLog, type Settle } from './feed.js';
import type { OnceWrites } from './once.js';
import { StoreError } from '../errors.js';
import type { SharedFeed } from '../feed/index.js';

/** What every write of one model handle goes through. */
export interface WritePath {
  objects: Collection<StoredDoc>;
  claims: Claims;
  cas: Cas;
  log: MongoChangeLog;
  feed: SharedFeed;
  /** FerretDB: object writes as plain commands, never retried by the driver (once.ts). */
  once?: OnceWrites;
}

export const notFound = (name: string) => new StoreError('NotFound', `object "${name}" not found`);
export const conflict = (name: string, expected: number) => new StoreError('Conflict', `object "${name}" is not at version ${expected}`);

export class ObjectWrite {
  /** The claims `claim` inserted: released by `undo`. */
  private acquired: Acquired[] = [];
  /** The feed position of the entry `enter` made, while it is not settled. */
  private entry: string | undefined;
  /** The version whose compare-and-set marker may be held (a write that failed before it was sent). */
  private marked: number | undefined;

  constructor(
    private readonly path: WritePath,
    readonly name: string,
    /** The object's incarnation. */
    readonly g: string,
  ) {}

  /** Claims the unique values of the object at `version` (unique values first: a write that loses one never touches the feed). */
  async claim(version: number, unique: UniqueValue[]): Promise<void> {
    // Others judge this process's claims by its lease (claims.ts): fresh before claiming.
    if (unique.length) await this.path.log.ready();
    this.acquired = await this.path.claims.acquire(this.name, this.g, version, unique);
  }

  /** Step 1 of the feed protocol: the pending entry. Returns its position, for the object's `f`. */
  async enter(change: Omit<ChangeIntent, 'name' | 'g'>): Promise<string> {
    try {
      this.entry = await this.path.log.begin({ ...change, name: this.name, g: this.g });
    } catch (e) {
      await this.undo();
      throw e;
    }
    return this.entry;
  }

  /** A create's object write: `_id` is the only unique index of the object collection. */
  async insert(doc: StoredDoc): Promise<void> {
    const { objects } = this.path;
    try {
      this.leaseHeld();
      await objects.insertOne(doc);
    } catch (e) {
      // A retried insert (against a replica set member the driver retries once after a
      // network error) can find the document its first attempt wrote: same incarnation →
      // this create succeeded. Servers without retryable-write deduplication (FerretDB as a
      // replica set member) report that as a duplicate key.
      if (isDuplicateKey(e) && (await this.insertedBefore())) return;
      // Without an answer the insert is completed (sent again until one comes: a copy held up
      // on its way then finds the object there), so it cannot appear after its entry is settled.
      const complete = async () => {
        try {
          await objects.insertOne(doc);
        } catch (again) {
          if (!isDuplicateKey(again)) throw again;
        }
      };
      await this.failed(e, { complete });
      if (isDuplicateKey(e)) throw new StoreError('AlreadyExists', `object "${doc._id}" already exists`);
      throw e;
    }
  }

  /** Whether the object there is this create's own (its first attempt's) document. */
  private async insertedBefore(): Promise<boolean> {
    try {
      return (await this.path.objects.findOne({ _id: this.name }, { projection: { [SVC.g]: 1 } }))?._svc?.g === this.g;
    } catch (lookup) {
      // Not known whether the first attempt wrote it: the feed settles that on its own.
      await this.failed(lookup);
      throw lookup;
    }
  }

  /** An update's object write: replaces the object only while it is at version `v`. */
  async replace(v: number, doc: StoredDoc): Promise<void> {
    const { objects, once } = this.path;
    const { _id, ...replacement } = doc;
    await this.compareAndSet(
      v,
      async (filter) => {
        const matched = once ? await once.replace(filter, replacement) : (await objects.replaceOne(filter, replacement)).matchedCount;
        return matched ? true : null;
      },
      async (filter) => {
        await objects.replaceOne(filter, replacement);
      },
    );
  }

  /** A remove's object write: deletes the object only while it is at version `v`; returns what it deleted. */
  delete(v: number): Promise<StoredDoc> {
    const { objects, once } = this.path;
    return this.compareAndSet(
      v,
      (filter) => (once ? once.findAndDelete(filter) : objects.findOneAndDelete(filter)),
      async (filter) => {
        await objects.deleteOne(filter);
      },
    );
  }

  /**
   * Runs `send` as the compare-and-set on version `v`. Refused (the object is not at `v`):
   * undone, NotFound or Conflict. Failed before it was sent: undone. Sent without an answer: in
   * doubt, settled by the feed with `resend` (where that is safe, cas.ts 2.).
   */
  private async compareAndSet<T>(v: number, send: (filter: Filter<StoredDoc>) => Promise<T | null>, resend: (filter: Filter<StoredDoc>) => Promise<void>): Promise<T> {
    const { cas, objects } = this.path;
    let sent = false;
    let done: T | null;
    try {
      done = await cas.run(this.name, this.g, v, (filter) => {
        this.leaseHeld();
        sent = true;
        return send(filter);
      });
    } catch (e) {
      if (!sent) {
        // Nothing was written (the marker may have been: it goes with the next sweep).
        this.marked = v;
        await this.undo();
        throw e;
      }
      await this.failed(e, this.settleInDoubt(v, resend));
      throw e;
    }
    if (done === null) {
      await this.undo();
      const now = await objects.findOne({ _id: this.name }, { projection: { _id: 1 } });
      throw now ? conflict(this.name, v) : notFound(this.name);
    }
    return done;
  }

  /**
   * How the feed settles a conditional object write of version `v` that got no answer: `write`
   * sent again where the compare-and-set is atomic; otherwise the feed waits for the write to
   * show. The write's marker is released once it is settled.
   */
  private settleInDoubt(v: number, write: (filter: Filter<StoredDoc>) => Promise<void>): Settle {
    const settled = () => this.path.cas.release(this.name, this.g, v);
    if (!this.path.cas.resend) return { settled };
    return { complete: () => write(casFilter(this.name, this.g, v) as Filter<StoredDoc>), settled };
  }

  /**
   * The object write threw after the entry was made: the feed aborts the entry when the write
   * certainly did not happen (then the claims go too), else settles it later (`settle`) and
   * the claims stay while the write may still have happened (a stale claim is repaired later).
   */
  private async failed(e: unknown, settle?: Settle): Promise<void> {
    const entry = this.entry!;
    this.entry = undefined;
    if (await this.path.log.failed(entry, e, settle)) await this.undo();
  }

  /**
   * The write is done: its entry confirmed, watchers woken, then the claims of `values` released
   * that the object (incarnation `g`) no longer holds after this write at `version` (undefined:
   * a removal, whatever their version).
   */
  async commit(release?: { version: number | undefined; values: UniqueValue[] }): Promise<void> {
    await this.path.log.finish(this.entry!, 'c');
    this.entry = undefined;
    this.path.feed.wake();
    if (release) await this.path.claims.release(this.name, this.g, release.version, release.values);
  }

  /** The write certainly did not happen: releases its marker, aborts its entry, releases its claims. */
  private async undo(): Promise<void> {
    if (this.marked !== undefined) this.path.cas.release(this.name, this.g, this.marked);
    if (this.entry !== undefined) await this.path.log.finish(this.entry, 'a');
    this.marked = this.entry = undefined;
    await this.path.claims.releaseAcquired(this.acquired);
    this.acquired = [];
  }

  /** Step 2 of the feed protocol: never write an object while this process's lease is stale. */
  private leaseHeld(): void {
    if (!this.path.log.mayWrite()) throw new StoreError('Unavailable', LEASE_STALE);
  }
}
