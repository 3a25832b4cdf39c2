/**
 * In-process change feed of one model: a monotonically increasing position, a bounded history
 * for resuming, and fan-out to subscribers. Adapters publish after every committed write.
 *
 * Positions are `<feed id>.<counter>`: the random feed id makes positions from an earlier process
 * (or another model) unknown here instead of silently meaning something else. History older than
 * `capacity` events is dropped; resuming from a dropped or unknown position throws StoreError
 * `Expired` (REST/GraphQL turn it into 410).
 *
 * Scope: one gateway process. Sharing a feed between processes is the watch issue's job; the
 * port (ModelStore.watch/resourceVersion) stays the same.
 */
import { randomBytes } from 'node:crypto';
import { StoreError } from './errors.js';
import type { ChangeEvent, Unsubscribe, WatchEventType } from './types.js';
import type { ApiObject } from '../registry/object.js';

export class ChangeFeed {
  private seq = 0;
  private readonly id = randomBytes(4).toString('hex');
  private readonly history: ChangeEvent[] = [];
  private readonly listeners = new Set<(e: ChangeEvent) => void>();

  constructor(private readonly capacity = 10_000) {}

  current(): string {
    return this.position(this.seq);
  }

  private position(seq: number): string {
    return `${this.id}.${seq}`;
  }

  /** The counter of a position of this feed, or undefined when it is not one of ours. */
  private sequenceOf(rv: string): number | undefined {
    const dot = rv.indexOf('.');
    if (dot < 0 || rv.slice(0, dot) !== this.id) return undefined;
    const n = rv.slice(dot + 1);
    return /^\d+$/.test(n) ? Number(n) : undefined;
  }

  publish(type: WatchEventType, object: ApiObject): ChangeEvent {
    this.seq += 1;
    const event: ChangeEvent = { type, object, resourceVersion: this.position(this.seq) };
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
      const pos = this.sequenceOf(from);
      const oldest = this.history.length ? this.seq - this.history.length + 1 : this.seq + 1;
      if (pos === undefined || pos > this.seq || pos < oldest - 1) {
        throw new StoreError('Expired', `resourceVersion "${from}" is too old or unknown; list again and watch from its resourceVersion`);
      }
      for (let i = Math.max(0, this.history.length - (this.seq - pos)); i < this.history.length; i++) {
        onEvent(this.history[i]!);
      }
    }
    this.listeners.add(onEvent);
    return () => {
      this.listeners.delete(onEvent);
    };
  }
}
