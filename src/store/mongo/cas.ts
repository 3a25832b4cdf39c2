/**
 * Compare-and-set on one object: "write this only if the object is still at version v".
 *
 * MongoDB: a single-document update/delete whose filter includes the expected version is
 * atomic, so the version simply goes into the filter.
 *
 * FerretDB 1.24 (the test server): it is not. An update or delete first reads the documents
 * matching the filter, then writes them by `_id`, so two writers that read the same version
 * both succeed (the contract's "exactly one wins" test fails). Only the insert of a given `_id`
 * is atomic there. So each write first inserts a marker `["#write", name, incarnation, v]` into
 * the model's claims collection: one writer per (object, version) gets it. The winner re-reads
 * the object to confirm it is still at v, writes by `_id` alone, and deletes the marker. A
 * marker left by a crashed writer is taken over after GRACE_MS.
 * (Filtering by `_id` alone is also what FerretDB pushes down to SQLite; a filter with `v`
 * makes it decode every document of the collection in Go, and it gets slower as it goes.)
 */
import type { Collection, Filter, UpdateFilter } from 'mongodb';
import { GRACE_MS } from './claims.js';
import { MongoBulkWriteError } from 'mongodb';
import { isDuplicateKey } from './errors.js';
import { casFilter, VERSION_PROJECTION, type StoredDoc } from './document.js';

export interface Cas {
  /**
   * Runs `write` with a filter that matches object `name` (incarnation `g`) only while it is at
   * version `v`. Resolves to `write`'s result, or null when the object is not at that version
   * (the caller tells NotFound from Conflict). `write` itself resolves to null when it matched
   * nothing.
   */
  run<T>(name: string, g: string, v: number, write: (filter: Filter<StoredDoc>) => Promise<T | null>): Promise<T | null>;
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

async function bulkUpdate(objects: Collection<StoredDoc>, ops: { filter: Filter<StoredDoc>; update: UpdateFilter<StoredDoc> }[]): Promise<number> {
  let n = 0;
  for (let k = 0; k < ops.length; k += UPDATES_PER_COMMAND) {
    const r = await objects.bulkWrite(
      ops.slice(k, k + UPDATES_PER_COMMAND).map((o) => ({ updateOne: o })),
      { ordered: false },
    );
    n += r.matchedCount;
  }
  return n;
}

/** A write in progress; kept in the claims collection (see claims.ts), which `x` tells apart. */
export interface MarkerDoc {
  _id: string;
  x: '#write';
  at: Date;
  /** Set by an index rebuild, which holds it for one update only: writers wait for it. */
  rebuild?: true;
}

/** MongoDB: the filter is the compare-and-set. */
export const atomicCas: Cas = {
  run: (name, g, v, write) => write(casFilter(name, g, v) as Filter<StoredDoc>),
  rebuild: (objects, items) => bulkUpdate(objects, items.map((x) => ({ filter: casFilter(x.name, x.g, x.v) as Filter<StoredDoc>, update: x.update }))),
};

/** Servers whose conditional writes are not atomic (FerretDB): one marker per (object, version). */
export function markerCas(objects: Collection<StoredDoc>, markers: Collection<MarkerDoc>): Cas {
  const take = async (id: string): Promise<boolean> => {
    for (let attempt = 0, waits = 0; attempt < 2; attempt++) {
      try {
        await markers.insertOne({ _id: id, x: '#write', at: new Date() });
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
      if (m && Date.now() - new Date(m.at).getTime() <= GRACE_MS) return false; // a live writer
      if (m) await markers.deleteOne({ _id: id, at: m.at }); // its writer died: take it over
    }
    return false;
  };
  return {
    async run(name, g, v, write) {
      const id = JSON.stringify(['#write', name, g, v]);
      if (!(await take(id))) return null;
      try {
        const now = (await objects.findOne({ _id: name }, { projection: VERSION_PROJECTION }))?._svc;
        if (!now || now.v !== v || now.g !== g) return null;
        return await write({ _id: name });
      } finally {
        await markers.deleteOne({ _id: id });
      }
    },
    // FerretDB rewrites the whole document on an update, so an unguarded update could even
    // undo a concurrent write: a rebuild takes the markers of the versions it read, confirms
    // the objects are still at them, updates by `_id`, and releases the markers.
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
        return await bulkUpdate(objects, still.map((m) => ({ filter: { _id: m.x.name }, update: m.x.update })));
      } finally {
        if (taken.size) await markers.deleteMany({ _id: { $in: [...taken] } });
      }
    },
  };
}
