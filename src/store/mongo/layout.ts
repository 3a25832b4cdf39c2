/**
 * In-place upgrade of a model's object collection to the current document layout (LAYOUT in
 * document.ts), run by syncModel (indexes.ts) on every start, under the model's schema lease.
 *
 * Layout 1 (up to this version): `{ _id, v, g, o: JSON text of the object, f, i, s, r }`.
 * Layout 2: native fields + `_svc: { v, g, f, i, s, r, t, j }` (document.ts).
 *
 * - A marker `{ _id: "#layout <model key>", layout: 2 }` in `_svc_models` says a collection is
 *   done; a start that finds it reads nothing else (one findOne per model and start).
 * - Without it, every document that has no `_svc` field (layout 1: a layout-2 document always
 *   has one) is rewritten, BATCH_SIZE at a time, by a replace whose filter is
 *   `{ _id, _svc: { $exists: false } }`: per document and idempotent, so a gateway killed halfway
 *   leaves some documents in each layout, and the next start simply converts the rest. The
 *   marker is written only when no layout-1 document is left.
 * - The incarnation `g`, the feed stamp `f` and the stored index values `i`/`s` (and the
 *   recompute flag `r`) are carried over as they are: the unique-value claims (which name the
 *   incarnation) and the change feed's entries (which stay JSON text and are not touched) keep
 *   matching the objects, so watch positions and unique values survive. The physical indexes
 *   over the old field paths (`i.*`, `s.*`) are then replaced by reconcile() in indexes.ts.
 * - Two gateways starting at once: the schema lease lets one convert while the other waits; the
 *   second finds the marker. No process serves a model before its model() (and so this) ends.
 * - A gateway of the previous version must not keep writing beside an upgraded one: it would
 *   write layout-1 documents again (stop every old gateway before starting this version).
 */
import type { AnyBulkWriteOperation, Collection } from 'mongodb';
import { LAYOUT, nativeFields, type StoredDoc, type SvcFields } from './document.js';
import type { ApiObject } from '../object.js';

/** A document as layout 1 stored it. */
export interface LayoutOneDoc {
  _id: string;
  v: number;
  g: string;
  o: string;
  f?: string;
  i?: Record<string, string[]>;
  s?: Record<string, string>;
  r?: true;
}

interface LayoutMarker {
  _id: string;
  layout: number;
}

export const layoutMarkerId = (key: string): string => `#layout ${key}`;

/** Layout-1 document → layout-2 document (same `_id`, incarnation, feed stamp, index values). */
export function upgradeDoc(old: LayoutOneDoc): StoredDoc {
  const obj = JSON.parse(old.o) as ApiObject;
  const svc: SvcFields = { v: old.v, g: old.g, i: old.i ?? {}, s: old.s ?? {} };
  if (old.f !== undefined) svc.f = old.f;
  if (old.r) svc.r = true;
  return { _id: old._id, ...nativeFields(obj, svc), _svc: svc };
}

export interface UpgradeOptions {
  batchSize?: number;
  /** Called after each batch is written (tests stop here to play a gateway killed halfway). */
  afterBatch?: (converted: number) => void | Promise<void>;
}

/** Documents per replace command (FerretDB hangs on commands with 100+ statements, cas.ts). */
const PER_COMMAND = 50;

/**
 * Brings a model's collection to LAYOUT; returns how many documents it converted. Idempotent and
 * resumable (see the header). Must run under the model's schema lease.
 */
export async function upgradeLayout(
  objects: Collection<StoredDoc>,
  markers: Collection<LayoutMarker>,
  key: string,
  opts: UpgradeOptions = {},
): Promise<number> {
  const id = layoutMarkerId(key);
  if (((await markers.findOne({ _id: id }))?.layout ?? 0) >= LAYOUT) return 0;
  const old = objects as unknown as Collection<LayoutOneDoc & { _svc?: unknown }>;
  const batchSize = opts.batchSize ?? 500;
  let converted = 0;
  for (;;) {
    // Converted documents leave the filter, so each page is the next one.
    const batch = await old.find({ _svc: { $exists: false } }).limit(batchSize).toArray();
    if (!batch.length) break;
    for (let k = 0; k < batch.length; k += PER_COMMAND) {
      const ops: AnyBulkWriteOperation<StoredDoc>[] = batch.slice(k, k + PER_COMMAND).map((d) => {
        const { _id, ...replacement } = upgradeDoc(d);
        return { replaceOne: { filter: { _id, _svc: { $exists: false } } as never, replacement: replacement as never } };
      });
      await objects.bulkWrite(ops, { ordered: false });
    }
    converted += batch.length;
    await opts.afterBatch?.(converted);
  }
  await markers.updateOne({ _id: id }, { $set: { layout: LAYOUT } }, { upsert: true });
  return converted;
}
