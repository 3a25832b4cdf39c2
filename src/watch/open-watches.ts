/**
 * The open watch streams of one gateway, per model key (`StorageModel.key`, e.g.
 * `people.example.com/v1alpha1/persons`). `end(key)` ends every stream of a model with a final
 * ERROR event: the gateway's WatchHub calls it when the registry announces that a model is no
 * longer served (its change hook), so streams end when a plugin stops.
 */
export interface ActiveWatch {
  /** Ends the stream with an ERROR event of this code and message. */
  end(code: number, message: string): void;
}

export class OpenWatches {
  private readonly active = new Map<string, Set<ActiveWatch>>();

  track(modelKey: string, w: ActiveWatch): () => void {
    let set = this.active.get(modelKey);
    if (!set) this.active.set(modelKey, (set = new Set()));
    set.add(w);
    return () => {
      set.delete(w);
      if (!set.size && this.active.get(modelKey) === set) this.active.delete(modelKey);
    };
  }

  /** Ends every open watch of a model (it is no longer served). Returns how many were ended. */
  end(modelKey: string, message = `${modelKey} is no longer served`): number {
    const set = this.active.get(modelKey);
    if (!set) return 0;
    const all = [...set];
    for (const w of all) w.end(410, message);
    return all.length;
  }

  /** Number of open watch streams (all models, or one): metrics, diagnostics and tests. */
  count(modelKey?: string): number {
    if (modelKey !== undefined) return this.active.get(modelKey)?.size ?? 0;
    let n = 0;
    for (const s of this.active.values()) n += s.size;
    return n;
  }
}
