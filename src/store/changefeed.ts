/**
 * In-process change feed of one model: a monotonically increasing position, a bounded history
 * for resuming, and fan-out to subscribers. Adapters publish after every committed write.
 *
 * Positions are decimal strings of a counter. History older than `capacity` events is dropped;
 * resuming from a dropped position throws StoreError `Expired` (REST/GraphQL turn it into 410).
 *
 * Scope: one gateway process. Sharing a feed between processes is the watch issue's job; the
 * port (ModelStore.watch/resourceVersion) stays the same.
 */
import { StoreError } from './errors.js';
import type { ChangeEvent, Unsubscribe, WatchEventType } from './types.js';
import type { ApiObject } from '../registry/object.js';

export class ChangeFeed {
  private seq = 0;
  private readonly history: ChangeEvent[] = [];
  private readonly listeners = new Set<(e: ChangeEvent) => void>();

  constructor(private readonly capacity = 10_000) {}

  current(): string {
    return String(this.seq);
  }

  publish(type: WatchEventType, object: ApiObject): ChangeEvent {
    this.seq += 1;
    const event: ChangeEvent = { type, object, resourceVersion: String(this.seq) };
    this.history.push(event);
    if (this.history.length > this.capacity) this.history.shift();
    for (const l of this.listeners) {
      try {
        l(event);
      } catch {
        // a failing subscriber must not break the writer or other subscribers
      }
    }
    return event;
  }

  subscribe(from: string | undefined, onEvent: (e: ChangeEvent) => void): Unsubscribe {
    if (from !== undefined && from !== '') {
      if (!/^\d+$/.test(from)) throw new StoreError('Expired', `resourceVersion "${from}" is not held`);
      const pos = Number(from);
      const oldest = this.history.length ? Number(this.history[0]!.resourceVersion) : this.seq + 1;
      if (pos > this.seq || pos < oldest - 1) {
        throw new StoreError('Expired', `resourceVersion "${from}" is too old or unknown`);
      }
      for (const e of this.history) if (Number(e.resourceVersion) > pos) onEvent(e);
    }
    this.listeners.add(onEvent);
    return () => {
      this.listeners.delete(onEvent);
    };
  }
}
