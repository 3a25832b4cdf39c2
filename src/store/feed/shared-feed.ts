/**
 * One model's change feed in one process, above either adapter: a single poller reads the
 * durable change log (ChangeLog) and fans every change out to all subscribers of the model, so
 * a thousand watchers cost one database read per poll, not a thousand.
 *
 * A subscriber that starts behind the poller (resume from an older position) first replays from
 * the log on its own, then joins the live fan-out exactly where the poller stands; positions are
 * compared on every hand-over, so nothing is delivered twice or skipped.
 * Local writes call `wake()` so their events go out at once; other processes' writes are seen
 * within `pollMs`.
 *
 * Fan-out groups: a subscriber may attach a gate to its callback (`onEvent[FEED_GATE]`, see
 * FeedGate) saying which changes can matter to it, as a pure function shared by every
 * subscriber with the same gate key (e.g. one watch selector). Live subscribers with a gate are
 * kept per key; a change is tested once per key and the members of a group it cannot matter to
 * are not visited at all. (A callback property rather than a parameter, so the store port and the
 * adapters that pass the callback through stay as they are.)
 */
import { StoreError } from '../errors.js';
import type { ChangeEvent, OnFeedLost, Unsubscribe } from '../types.js';
import { expired, parsePosition, type ChangeLog } from './change-log.js';

/** The property of a subscriber's callback that holds its FeedGate (optional, may be set later). */
export const FEED_GATE = Symbol('svc.feedGate');

/**
 * Which changes can matter to a subscriber: `pass(e)` false means the callback would do nothing
 * with `e`. Subscribers with the same `key` must have gates that answer alike (only the first
 * member's is asked). A subscriber sets its gate once nothing but the gate decides what it
 * ignores; until then it gets every change.
 */
export interface FeedGate {
  readonly key: string;
  pass(e: ChangeEvent): boolean;
  /**
   * Called when the subscriber joins its group: from then on every change the feed delivers is
   * either handed to it or refused by the group's gate.
   */
  joined?(): void;
}

type GatedCallback = ((e: ChangeEvent) => void) & { [FEED_GATE]?: FeedGate };

export interface SharedFeedOptions {
  /** Poll interval while anyone subscribes. Default 50 ms. */
  pollMs?: number;
  /** Changes read per query. Default 500. */
  batch?: number;
}

interface Subscriber {
  /** Last position delivered (not kept up to date once the subscriber is in a group). */
  cursor: bigint;
  live: boolean;
  closed: boolean;
  onEvent: GatedCallback;
  onLost?: OnFeedLost;
  /** The gate key of the group it belongs to, once in one. */
  group?: string;
}

interface Group {
  gate: FeedGate;
  members: Set<Subscriber>;
}

export class SharedFeed {
  private readonly subs = new Set<Subscriber>();
  /** Live subscribers at the poller's position without a gate (or not yet in a group). */
  private readonly loose = new Set<Subscriber>();
  /** Live, gated subscribers at the poller's position, by gate key. */
  private readonly groups = new Map<string, Group>();
  /** Last position the poller delivered; undefined while nobody subscribes. */
  private cursor: bigint | undefined;
  private timer: NodeJS.Timeout | undefined;
  private polling = false;
  private again = false;
  private closed = false;
  private readonly pollMs: number;
  private readonly batch: number;

  constructor(
    private readonly log: ChangeLog,
    opts: SharedFeedOptions = {},
  ) {
    this.pollMs = opts.pollMs ?? 50;
    this.batch = opts.batch ?? 500;
  }

  async resourceVersion(): Promise<string> {
    return String(await this.log.head());
  }

  async horizon(): Promise<string> {
    return String(await this.log.horizon());
  }

  /** Number of subscribers (diagnostics, tests). */
  get size(): number {
    return this.subs.size;
  }

  async subscribe(from: string | undefined, onEvent: (e: ChangeEvent) => void, onLost?: OnFeedLost): Promise<Unsubscribe> {
    if (this.closed) throw new StoreError('Unavailable', 'the store is closed');
    let start: bigint;
    if (from === undefined || from === '') start = await this.log.head();
    else {
      const pos = parsePosition(from);
      if (pos === undefined) throw expired(from, 'is not a position of this change feed');
      await this.log.check(pos);
      start = pos;
    }
    const sub: Subscriber = { cursor: start, live: false, closed: false, onEvent, onLost };
    this.subs.add(sub);
    if (this.cursor === undefined) {
      this.cursor = start;
      this.goLive(sub);
      this.schedule(0);
    } else if (start >= this.cursor) {
      this.goLive(sub); // ahead of the poller: positions up to `start` are skipped on delivery
    } else {
      void this.catchUp(sub);
    }
    return () => this.drop(sub);
  }

  /** A local write committed: poll now instead of at the next tick. */
  wake(): void {
    if (this.subs.size) this.schedule(0);
  }

  /** Ends every subscription (store closing). */
  close(): void {
    this.closed = true;
    const err = new StoreError('Unavailable', 'the store is closed');
    for (const s of [...this.subs]) this.lose(s, err);
    this.stop();
  }

  private drop(sub: Subscriber): void {
    sub.closed = true;
    this.subs.delete(sub);
    this.loose.delete(sub);
    if (sub.group !== undefined) {
      const g = this.groups.get(sub.group);
      g?.members.delete(sub);
      if (g && !g.members.size) this.groups.delete(sub.group);
      sub.group = undefined;
    }
    if (!this.subs.size) this.stop();
  }

  private goLive(sub: Subscriber): void {
    sub.live = true;
    this.loose.add(sub);
    this.regroup(sub);
  }

  /**
   * Moves a loose subscriber into its gate's group once it has a gate and stands at (not ahead
   * of) the poller: from then on every change the poller delivers is after its position.
   */
  private regroup(sub: Subscriber): void {
    const gate = sub.onEvent[FEED_GATE];
    if (!gate || sub.closed || sub.group !== undefined || this.cursor === undefined || sub.cursor > this.cursor) return;
    this.loose.delete(sub);
    let g = this.groups.get(gate.key);
    if (!g) this.groups.set(gate.key, (g = { gate, members: new Set() }));
    g.members.add(sub);
    sub.group = gate.key;
    try {
      gate.joined?.();
    } catch {
      // a failing subscriber must not break the others
    }
  }

  private lose(sub: Subscriber, err: Error): void {
    if (sub.closed) return;
    this.drop(sub);
    try {
      sub.onLost?.(err);
    } catch {
      // a failing subscriber must not break the others
    }
  }

  private stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.cursor = undefined;
    this.loose.clear();
    this.groups.clear();
  }

  private schedule(ms: number): void {
    if (this.polling) {
      if (ms === 0) this.again = true;
      return;
    }
    if (this.timer) {
      if (ms !== 0) return;
      clearTimeout(this.timer);
    }
    this.timer = setTimeout(() => void this.poll(), ms);
    this.timer.unref?.();
  }

  private async poll(): Promise<void> {
    this.timer = undefined;
    if (this.cursor === undefined || this.closed) return;
    this.polling = true;
    let full = false;
    try {
      const events = await this.log.read(this.cursor, this.batch);
      full = events.length === this.batch;
      for (const e of events) this.deliverLive(e);
    } catch (e) {
      if (e instanceof StoreError && e.code === 'Expired') {
        for (const s of [...this.subs]) this.lose(s, e);
      }
      // otherwise (store unreachable): keep polling; subscribers resume where they were
    } finally {
      this.polling = false;
    }
    if (!this.subs.size) return;
    const now = this.again || full;
    this.again = false;
    this.schedule(now ? 0 : this.pollMs);
  }

  private deliverLive(e: ChangeEvent): void {
    const pos = BigInt(e.resourceVersion);
    if (this.cursor === undefined || pos <= this.cursor) return;
    this.cursor = pos;
    for (const g of this.groups.values()) {
      let pass: boolean;
      try {
        pass = g.gate.pass(e);
      } catch {
        pass = true;
      }
      if (!pass) continue;
      for (const s of g.members) {
        try {
          s.onEvent(e);
        } catch {
          // a failing subscriber must not break the poller or other subscribers
        }
      }
    }
    for (const s of this.loose) {
      if (pos <= s.cursor) continue;
      s.cursor = pos;
      try {
        s.onEvent(e);
      } catch {
        // as above
      }
      this.regroup(s);
    }
  }

  /** Replays from the log until the subscriber reaches the poller, then makes it live. */
  private async catchUp(sub: Subscriber): Promise<void> {
    try {
      while (!sub.closed) {
        if (this.cursor === undefined || sub.cursor >= this.cursor) {
          this.goLive(sub);
          return;
        }
        const events = await this.log.read(sub.cursor, this.batch);
        if (sub.closed) return;
        for (const e of events) {
          const pos = BigInt(e.resourceVersion);
          if (pos <= sub.cursor) continue;
          sub.cursor = pos;
          sub.onEvent(e);
          if (sub.closed) return;
        }
        if (!events.length) await new Promise((r) => setTimeout(r, this.pollMs));
      }
    } catch (e) {
      this.lose(sub, e instanceof Error ? e : new Error(String(e)));
    }
  }
}
