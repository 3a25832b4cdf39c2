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
import type { Collection, Filter } from 'mongodb';
import { GRACE_MS } from './claims.js';
import { isDuplicateKey } from './errors.js';
import type { StoredDoc } from './document.js';

export interface Cas {
  /**
   * Runs `write` with a filter that matches object `name` (incarnation `g`) only while it is at
   * version `v`. Resolves to `write`'s result, or null when the object is not at that version
   * (the caller tells NotFound from Conflict). `write` itself resolves to null when it matched
   * nothing.
   */
  run<T>(name: string, g: string, v: number, write: (filter: Filter<StoredDoc>) => Promise<T | null>): Promise<T | null>;
  /** Filter for an index-value rewrite of a document read at version `v`. */
  rebuildFilter(name: string, v: number): Filter<StoredDoc>;
}

/** A write in progress; kept in the claims collection (see claims.ts), which `x` tells apart. */
export interface MarkerDoc {
  _id: string;
  x: '#write';
  at: Date;
}

/** MongoDB: the filter is the compare-and-set. */
export const atomicCas: Cas = {
  run: (name, g, v, write) => write({ _id: name, v, g }),
  rebuildFilter: (name, v) => ({ _id: name, v }),
};

/** Servers whose conditional writes are not atomic (FerretDB): one marker per (object, version). */
export function markerCas(objects: Collection<StoredDoc>, markers: Collection<MarkerDoc>): Cas {
  const take = async (id: string): Promise<boolean> => {
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        await markers.insertOne({ _id: id, x: '#write', at: new Date() });
        return true;
      } catch (e) {
        if (!isDuplicateKey(e)) throw e;
      }
      const m = await markers.findOne({ _id: id });
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
        const now = await objects.findOne({ _id: name }, { projection: { v: 1, g: 1 } });
        if (!now || now.v !== v || now.g !== g) return null;
        return await write({ _id: name });
      } finally {
        await markers.deleteOne({ _id: id });
      }
    },
    // Not guarded on FerretDB: an object written while its index is being rebuilt may keep the
    // value computed from the version the rebuild read, until its next write.
    rebuildFilter: (name) => ({ _id: name }),
  };
}
