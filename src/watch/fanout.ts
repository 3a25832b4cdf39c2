/**
 * Fan-out sharing for one gateway: what a change means for a selector is decided once per
 * (change, model entry, selector) however many watchers use that selector, and the event object
 * (and so its encoding, ./encode.ts) exists once per change. Watchers past their list
 * reconciliation join their selector's gate (store FeedGate), so a change their selector sees
 * neither before nor after does not visit them at all; the group's members get each read of
 * the feed as one batch, translated once for all of them (`translateBatch`).
 *
 * All of it lives in a FanOut object owned by the gateway's WatchHub: the memos are keyed by
 * change events and objects of this gateway's feed, and the gate map and entry ids are this
 * gateway's.
 */
import { matchesWhere } from '../query/plan.js';
import type { ModelEntry } from '../registry/registry.js';
import type { ApiObject } from '../store/object.js';
import type { ChangeEvent, FeedGate, IndexRequirement } from '../store/types.js';
import type { WatchEvent } from './types.js';

/** A compiled selector of one model entry, with the key under which its translations are shared. */
export interface Selection {
  entry: ModelEntry;
  where: readonly IndexRequirement[];
  /** What leaves the gateway: the kind's presentation of an object. */
  present: (obj: ApiObject) => ApiObject;
  key: string;
}

/**
 * The feed gate of a selector, one object for all its watchers: a change neither side of which
 * the selector matches is not handed to them at all. It also records the latest position the
 * feed tested, which is every such watcher's latest position for BOOKMARK.
 */
export interface SelectorGate extends FeedGate {
  position: string;
  refs: number;
}

export class FanOut {
  /** Translations of one change, shared by every watcher that translates it the same way. */
  private readonly translations = new WeakMap<ChangeEvent, Map<string, WatchEvent>>();
  /** Per (change, selector): the translated event, or null when neither side matches. */
  private readonly selections = new WeakMap<ChangeEvent, Map<string, WatchEvent | null>>();
  /** Index values of one object version, per compiled index (the same for every selector). */
  private readonly indexValues = new WeakMap<ApiObject, Map<object, readonly string[]>>();
  private readonly batchTranslations = new WeakMap<readonly ChangeEvent[], Map<string, readonly WatchEvent[]>>();
  private readonly entryIds = new WeakMap<ModelEntry, number>();
  private nextEntryId = 0;
  private readonly gates = new Map<string, SelectorGate>();
  /** The watchers of one selector ask in a row: the last answer, to skip the maps. */
  private lastChange: ChangeEvent | undefined;
  private lastKey = '';
  private lastOut: WatchEvent | undefined;

  selection(entry: ModelEntry, where: readonly IndexRequirement[], present: (obj: ApiObject) => ApiObject): Selection {
    let id = this.entryIds.get(entry);
    if (id === undefined) this.entryIds.set(entry, (id = this.nextEntryId++));
    return { entry, where, present, key: `${id}\u0000${JSON.stringify(where)}` };
  }

  /** The shared event of `type` for `change` (its object or its previous version). */
  shared(sel: Selection, change: ChangeEvent, type: WatchEvent['type'], object: ApiObject): WatchEvent {
    let m = this.translations.get(change);
    if (!m) this.translations.set(change, (m = new Map()));
    const key = `${type}:${object === change.object ? 'o' : 'p'}`;
    let e = m.get(key);
    if (!e) m.set(key, (e = { type, object: sel.present(object), resourceVersion: change.resourceVersion }));
    return e;
  }

  /** The change as the selector sees it (before and after): ADDED, MODIFIED, DELETED or nothing. */
  translate(sel: Selection, e: ChangeEvent): WatchEvent | undefined {
    if (e === this.lastChange && sel.key === this.lastKey) return this.lastOut;
    const out = this.translateShared(sel, e);
    this.lastChange = e;
    this.lastKey = sel.key;
    this.lastOut = out;
    return out;
  }

  /**
   * A batch of changes as the selector sees it, one array shared by every watcher of the
   * selector that receives this batch (a transport can then encode it once).
   */
  translateBatch(sel: Selection, events: readonly ChangeEvent[]): readonly WatchEvent[] {
    let m = this.batchTranslations.get(events);
    if (!m) this.batchTranslations.set(events, (m = new Map()));
    let out = m.get(sel.key);
    if (out === undefined) {
      const list: WatchEvent[] = [];
      for (const e of events) {
        const w = this.translate(sel, e);
        if (w) list.push(w);
      }
      m.set(sel.key, (out = list));
    }
    return out;
  }

  joinGate(sel: Selection): SelectorGate {
    let g = this.gates.get(sel.key);
    if (!g) {
      const gate: SelectorGate = {
        key: sel.key,
        position: '',
        refs: 0,
        pass: (e) => {
          gate.position = e.resourceVersion;
          return this.translate(sel, e) !== undefined;
        },
      };
      this.gates.set(sel.key, (g = gate));
    }
    g.refs++;
    return g;
  }

  leaveGate(g: SelectorGate): void {
    if (--g.refs <= 0 && this.gates.get(g.key) === g) this.gates.delete(g.key);
  }

  private valuesOf(entry: ModelEntry, obj: ApiObject, index: string): readonly string[] {
    const idx = entry.model.index(index);
    if (!idx) return [];
    let m = this.indexValues.get(obj);
    if (!m) this.indexValues.set(obj, (m = new Map()));
    let v = m.get(idx);
    if (v === undefined) m.set(idx, (v = idx.values(obj)));
    return v;
  }

  private selects(sel: Selection, obj: ApiObject): boolean {
    return matchesWhere(sel.where, (index) => this.valuesOf(sel.entry, obj, index));
  }

  private translateShared(sel: Selection, e: ChangeEvent): WatchEvent | undefined {
    let m = this.selections.get(e);
    if (!m) this.selections.set(e, (m = new Map()));
    let out = m.get(sel.key);
    if (out === undefined) {
      const was = e.type === 'DELETED' ? this.selects(sel, e.object) : e.previous !== undefined && this.selects(sel, e.previous);
      const is = e.type !== 'DELETED' && this.selects(sel, e.object);
      out = is ? this.shared(sel, e, was ? 'MODIFIED' : 'ADDED', e.object) : was ? this.shared(sel, e, 'DELETED', e.object) : null;
      m.set(sel.key, out);
    }
    return out ?? undefined;
  }
}
