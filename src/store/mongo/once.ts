/**
 * Object writes the driver sends exactly once, for servers whose conditional writes are not
 * atomic (FerretDB, cas.ts).
 *
 * Against a replica set member the driver retries a write once after a network error
 * (retryable writes, on by default), on a new connection. MongoDB recognises the retry (the
 * session's transaction number) and does not run it twice. FerretDB does not (started with
 * `--repl-set-name` it reports itself a member): the retry is a second copy of the write, run
 * beside the first when that one is still in progress, and FerretDB reads a match and writes by
 * `_id` in two steps, so the two copies can undo a newer write (cas.ts, 2.). Even alone, a retry
 * that finds its own first copy done matches nothing, and the write was reported as a conflict
 * although it had happened (its feed entry aborted while the object carried it).
 *
 * The driver's retry cannot be turned off per operation (only per client), and a plain command
 * (`db.command`) is never retried. So on FerretDB the compare-and-set object writes and the
 * rebuild's updates go out as plain `update` / `findAndModify` commands; a write without an
 * answer is then in doubt like any other (feed.ts, `doubt`). Other commands keep the driver's
 * retries: an insert of a unique `_id` (feed entries, claims, markers) is atomic on FerretDB,
 * and a retry that finds its own first copy is recognised there (feed.ts, `k`; claims.ts).
 */
import { MongoServerError, type Db, type Document, type Filter, type UpdateFilter } from 'mongodb';
import { StoreTimeout } from '../errors.js';
import type { TimeBounds } from './bounded.js';
import type { StoredDoc } from './document.js';

export interface OnceWrites {
  /** replaceOne: how many documents matched (0 or 1). */
  replace(filter: Filter<StoredDoc>, replacement: Omit<StoredDoc, '_id'>): Promise<number>;
  /** findOneAndDelete: the deleted document, or null when none matched. */
  findAndDelete(filter: Filter<StoredDoc>): Promise<StoredDoc | null>;
  /** One `update` command of single-document updates (unordered): how many matched. */
  updates(ops: { filter: Filter<StoredDoc>; update: UpdateFilter<StoredDoc> }[]): Promise<number>;
}

/**
 * The writes of collection `name` as plain commands, each aborted after `ms` (undefined: no
 * bound) like the request path's other operations (bounded.ts).
 */
export function onceWrites(db: Db, name: string, ms: number | undefined, bounds: TimeBounds): OnceWrites {
  const run = async (command: Document): Promise<Document> => {
    const signal = ms === undefined ? undefined : bounds.signal(ms);
    let res: Document;
    try {
      res = await db.command(command, { ignoreUndefined: true, ...(signal && { signal }) } as object);
    } catch (e) {
      if (signal?.aborted) throw new StoreTimeout(ms!, `MongoDB did not answer ${Object.keys(command)[0]} within ${ms} ms`);
      throw e;
    }
    // A command answers ok with the errors of its statements listed: raise them like the
    // driver's own helpers do (a duplicate key keeps its code 11000).
    const failed = (res.writeErrors as Document[] | undefined)?.[0] ?? (res.writeConcernError as Document | undefined);
    if (failed) throw new MongoServerError({ ...failed, message: String(failed.errmsg ?? 'write failed') });
    return res;
  };
  return {
    async replace(filter, replacement) {
      return Number((await run({ update: name, updates: [{ q: filter, u: replacement }] })).n ?? 0);
    },
    async findAndDelete(filter) {
      return ((await run({ findAndModify: name, query: filter, remove: true })).value as StoredDoc | null) ?? null;
    },
    async updates(ops) {
      if (!ops.length) return 0;
      return Number((await run({ update: name, updates: ops.map((o) => ({ q: o.filter, u: o.update })), ordered: false })).n ?? 0);
    },
  };
}
