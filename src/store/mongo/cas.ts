/**
 * Compare-and-set on one object: "write this only if the object is still at version v".
 *
 * MongoDB: a single-document update/delete whose filter includes the expected version (and
 * incarnation) is atomic, so the version simply goes into the filter.
 *
 * FerretDB 1.24 (the test server): it is not. An update or delete first reads the documents
 * matching the filter, then writes them by `_id`, so two writers that read the same version
 * both succeed when their commands run at the same time. Only the insert of a given `_id` is
 * atomic there. So each write first inserts a marker `["#write", name, incarnation, v]` into the
 * model's claims collection: one writer per (object, version) gets it.
 *
 * Why this holds, also when a write the client gave up on reaches the server later (
 * under load, writes abandoned at the store deadline landed seconds later and 3 of 1,000
 * acknowledged increments were lost):
 *  1. The object write itself carries the version and incarnation in its filter, on FerretDB
 *     too. Whenever it runs, it changes nothing unless the object is still at (g, v). (The old
 *     protocol re-read the object under the marker and then wrote by `_id` alone: a write
 *     held up on its way to the server overwrote whatever the object had become meanwhile.)
 *  2. FerretDB's filter is not atomic, so two writes of one (g, v) must never run at the same
 *     time: only the marker's holder writes (g, v), and the marker is released only when the
 *     holder's write is over (it answered: it ran, or matched nothing). A write that failed
 *     without an answer (time bound, connection lost) keeps its marker, and it is never sent
 *     again (`resend` is false): the writer waits for it to show on the object, and gives it up
 *     only after DOUBT_MS (feed.ts, `doubt`); then it releases the marker. A second copy would
 *     not be safe even with the same filter and document: FerretDB reads the match and writes
 *     by `_id` in two steps, so a copy that read (g, v) just before the other copy wrote can
 *     write after the next writer (of v + 1) did, and puts the object back to v + 1 (seen under
 *     load: one version acknowledged to two writers, test/hardening/lost-update.test.ts).
 *  3. A marker is taken over only when its writer is gone (its process's feed lease stopped
 *     moving, or it closed) or it is older than GRACE_MS (a writer that has not completed its
 *     write in that time has lost its server for as long), and only while the object is still
 *     at (g, v). A dead process sends nothing more, so nothing of it can land later (beyond
 *     what is already on its way: the bound of 2. again). Not closed: the takeover deletes the
 *     stale marker (filter on its `at`) and inserts its own, and on FerretDB that delete is a
 *     read and a delete by `_id`, so two processes taking over one stale marker within
 *     milliseconds could both end up holding it (one deletes the marker the other just put).
 *  4. Markers of a state the object has left are garbage: nobody can write that state any
 *     more (versions only grow within an incarnation), so a late writer finding one gets a
 *     conflict, which is the right answer. Released markers are deleted in batches off the
 *     request path, one command for many writes.
 * The price on FerretDB: it pushes a filter of `_id` alone down to SQLite, and decodes documents
 * in Go for anything more, so the conditional replace costs about twice the unconditional one
 * (measured: medians 70 vs 32 ms at 3,000 objects); the re-read under the marker it replaces
 * was ~1.5 ms. Correctness first: a write that may land at any later time must carry its
 * condition.
 */
import type { Collection, Filter, UpdateFilter } from 'mongodb';
import { GRACE_MS } from './claims.js';
import { MongoBulkWriteError } from 'mongodb';
import { isDuplicateKey } from './errors.js';
import { casFilter, VERSION_PROJECTION, type StoredDoc } from './document.js';
import type { OnceWrites } from './once.js';

export interface Cas {
  /**
   * Runs `write` with a filter that matches object `name` (incarnation `g`) only while it is at
   * version `v`. Resolves to `write`'s result, or null when the object is not at that version
   * (the caller tells NotFound from Conflict). `write` itself resolves to null when it matched
   * nothing.
   */
  run<T>(name: string, g: string, v: number, write: (filter: Filter<StoredDoc>) => Promise<T | null>): Promise<T | null>;
  /**
   * A write `run` threw for (its outcome unknown: its marker was kept) has since been completed
   * by the writer (it got a definite answer): its marker may go.
   */
  release(name: string, g: string, v: number): void;
  /**
   * Whether a write without an answer may be sent again to learn its outcome: only where the
   * conditional write is atomic, so that a copy still on its way changes nothing once the
   * other has run (MongoDB). Otherwise the writer waits for it (see the header, 2.).
   */
  readonly resend: boolean;
  /**
   * Index-value rewrites of objects read at version `v` (incarnation `g`), in batch, that no
   * concurrent write can interleave with; an object no longer at that version is skipped (the
   * newer write has fresh values). Writers meeting a rewrite wait for it rather than fail.
   * Returns how many were applied.
   */
  rebuild(objects: Collection<StoredDoc>, items: RebuildItem[]): Promise<number>;
}

export interface RebuildItem {
  name: string;
  g: string;
  v: number;
  update: UpdateFilter<StoredDoc>;
}

/**
 * FerretDB hangs on an `update` command with 100 or more statements (each holds one of its
 * pooled SQLite connections), so updates are sent in commands of at most this many.
 */
export const UPDATES_PER_COMMAND = 50;

type UpdateOp = { filter: Filter<StoredDoc>; update: UpdateFilter<StoredDoc> };

/** Sends `ops` in commands of at most UPDATES_PER_COMMAND; returns how many matched. */
async function bulkUpdate(send: (ops: UpdateOp[]) => Promise<number>, ops: UpdateOp[]): Promise<number> {
  let n = 0;
  for (let k = 0; k < ops.length; k += UPDATES_PER_COMMAND) n += await send(ops.slice(k, k + UPDATES_PER_COMMAND));
  return n;
}

const viaDriver = (objects: Collection<StoredDoc>) => async (ops: UpdateOp[]) =>
  (await objects.bulkWrite(ops.map((o) => ({ updateOne: o })), { ordered: false })).matchedCount;

/** A write in progress; kept in the claims collection (see claims.ts), which `x` tells apart. */
export interface MarkerDoc {
  _id: string;
  x: '#write';
  at: Date;
  /** The writing process (its feed lease, `writer:<w>` in `_svc_feed`); absent on old markers. */
  w?: string;
  /** Set by an index rebuild, which holds it for one update only: writers wait for it. */
  rebuild?: true;
}

/** MongoDB: the filter is the compare-and-set. */
export const atomicCas: Cas = {
  run: (name, g, v, write) => write(casFilter(name, g, v) as Filter<StoredDoc>),
  release: () => undefined,
  resend: true,
  rebuild: (objects, items) => bulkUpdate(viaDriver(objects), items.map((x) => ({ filter: casFilter(x.name, x.g, x.v) as Filter<StoredDoc>, update: x.update }))),
};

/** What markerCas needs to know about writers (their feed leases). */
export interface MarkerWriters {
  /** This process's writer id. */
  readonly id: string;
  /** True when writer `w` is gone (its lease is missing or stopped moving). */
  gone(w: string): Promise<boolean>;
}

/** How long released markers wait before they are deleted in one command. */
const SWEEP_MS = 1000;

/** Servers whose conditional writes are not atomic (FerretDB): one marker per (object, version). */
export function markerCas(objects: Collection<StoredDoc>, markers: Collection<MarkerDoc>, writers: MarkerWriters, once: OnceWrites): Cas {
  const released = new Set<string>();
  let sweep: NodeJS.Timeout | undefined;
  const release = (id: string) => {
    released.add(id);
    sweep ??= setTimeout(() => {
      sweep = undefined;
      const ids = [...released];
      released.clear();
      void markers.deleteMany({ _id: { $in: ids }, w: writers.id }).catch(() => undefined);
    }, SWEEP_MS);
    sweep.unref();
  };
  const markerId = (name: string, g: string, v: number) => JSON.stringify(['#write', name, g, v]);
  const take = async (id: string, name: string, g: string, v: number): Promise<boolean> => {
    for (let attempt = 0, waits = 0; attempt < 2; attempt++) {
      try {
        await markers.insertOne({ _id: id, x: '#write', at: new Date(), w: writers.id });
        return true;
      } catch (e) {
        if (!isDuplicateKey(e)) throw e;
      }
      const m = await markers.findOne({ _id: id });
      if (m?.rebuild && waits++ < 2000) {
        // An index rebuild holds it for one update: wait rather than report a conflict.
        await new Promise((r) => setTimeout(r, 5));
        attempt--;
        continue;
      }
      if (!m) continue; // deleted meanwhile
      const old = Date.now() - new Date(m.at).getTime() > GRACE_MS;
      if (!old && (m.w === undefined || m.w === writers.id || !(await writers.gone(m.w)))) return false; // a live writer
      // Its writer is gone (or stuck for GRACE_MS): take it over while the object is still at (g, v).
      const now = (await objects.findOne({ _id: name }, { projection: VERSION_PROJECTION }))?._svc;
      if (!now || now.v !== v || now.g !== g) return false;
      await markers.deleteOne({ _id: id, at: m.at });
    }
    return false;
  };
  return {
    async run(name, g, v, write) {
      const id = markerId(name, g, v);
      if (!(await take(id, name, g, v))) return null;
      // Throws with the marker kept: the outcome is unknown until the writer completes it.
      const r = await write(casFilter(name, g, v) as Filter<StoredDoc>);
      release(id);
      return r;
    },
    release: (name, g, v) => release(markerId(name, g, v)),
    resend: false,
    // FerretDB rewrites the whole document on an update, so an unguarded update could even
    // undo a concurrent write: a rebuild takes the markers of the versions it read, confirms
    // the objects are still at them, updates by `_id`, and releases the markers (not after an
    // update without a definite answer: see the header, 2.; those markers are taken over only
    // after GRACE_MS, the longest such an update is taken to stay on its way). One that still
    // lands later reads the object as it is then and writes it back with the rebuild's index
    // values, which are stale for a newer version (its next write recomputes them); it undoes
    // content only if another write lands between its read and its write. A version in the
    // filter would rule that out but costs a scan per update on FerretDB (it pushes down only
    // a filter of `_id` alone; 3x over a rebuild), for updates that reach the server 30 s late.
    async rebuild(objects, items) {
      const marked = items.map((x) => ({ x, id: JSON.stringify(['#write', x.name, x.g, x.v]) }));
      const taken = new Set<string>();
      try {
        for (let k = 0; k < marked.length; k += UPDATES_PER_COMMAND) {
          const chunk = marked.slice(k, k + UPDATES_PER_COMMAND);
          for (const m of chunk) taken.add(m.id);
          try {
            await markers.insertMany(
              chunk.map((m) => ({ _id: m.id, x: '#write' as const, at: new Date(), rebuild: true as const })),
              { ordered: false },
            );
          } catch (e) {
            if (!(e instanceof MongoBulkWriteError)) throw e;
            const errors = Array.isArray(e.writeErrors) ? e.writeErrors : [e.writeErrors];
            // Held by a writer of that version: it writes fresh values itself.
            for (const w of errors) if (w.code === 11000) taken.delete(chunk[w.index]!.id);
            if (errors.some((w) => w.code !== 11000)) throw e;
          }
        }
        const mine = marked.filter((m) => taken.has(m.id));
        if (!mine.length) return 0;
        const now = new Map(
          (await objects.find({ _id: { $in: mine.map((m) => m.x.name) } }, { projection: { _id: 1, ...VERSION_PROJECTION } }).toArray()).map((d) => [d._id, d._svc]),
        );
        const still = mine.filter((m) => now.get(m.x.name)?.v === m.x.v && now.get(m.x.name)?.g === m.x.g);
        // Plain commands, never retried by the driver (once.ts).
        const n = await bulkUpdate((ops) => once.updates(ops), still.map((m) => ({ filter: { _id: m.x.name }, update: m.x.update })));
        if (taken.size) await markers.deleteMany({ _id: { $in: [...taken] } });
        return n;
      } catch (e) {
        // Without a definite answer the markers stay (taken over after GRACE_MS), so no writer
        // runs beside an update that reaches the server late.
        throw e;
      }
    },
  };
}
