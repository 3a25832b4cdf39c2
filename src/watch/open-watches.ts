/**
 * The open watch streams of this process, per model key (`StorageModel.key`, e.g.
 * `people.example.com/v1alpha1/persons`). `endWatches(key)` ends every stream of a model with a
 * final ERROR event; Registry.unregister calls it, so streams end when a plugin stops.
 * No imports: it lives in the registry (which ends the streams of a model it stops serving), and
 * the operations layer registers each stream here.
 */
export interface ActiveWatch {
  /** Ends the stream with an ERROR event of this code and message. */
  end(code: number, message: string): void;
  /** The ModelStore the watch reads (one gateway's), so each gateway counts its own watches. */
  owner?: object;
}

const active = new Map<string, Set<ActiveWatch>>();

export function trackWatch(modelKey: string, w: ActiveWatch): () => void {
  let set = active.get(modelKey);
  if (!set) active.set(modelKey, (set = new Set()));
  set.add(w);
  return () => {
    set.delete(w);
    if (!set.size && active.get(modelKey) === set) active.delete(modelKey);
  };
}

/** Ends every open watch of a model (it is no longer served). Returns how many were ended. */
export function endWatches(modelKey: string, message = `${modelKey} is no longer served`): number {
  const set = active.get(modelKey);
  if (!set) return 0;
  const all = [...set];
  for (const w of all) w.end(410, message);
  return all.length;
}

/** Number of open watch streams (all models, or one): diagnostics and tests. */
export function activeWatchCount(modelKey?: string): number {
  if (modelKey !== undefined) return active.get(modelKey)?.size ?? 0;
  let n = 0;
  for (const s of active.values()) n += s.size;
  return n;
}

/** Open watch streams of one model read through `owner` (a gateway's ModelStore): metrics. */
export function watchesOf(modelKey: string, owner: object): number {
  let n = 0;
  for (const w of active.get(modelKey) ?? []) if (w.owner === owner) n++;
  return n;
}
