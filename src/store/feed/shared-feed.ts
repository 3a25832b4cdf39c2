/**
 * One model's change feed in one process, above either adapter: a single poller reads the
 * durable change log (ChangeLog) and fans every change out to all subscribers of the model, so
 * a thousand watchers cost one database read per poll, not a thousand.
 *
 * A subscriber that starts behind the poller (resume from an older position) first replays from
 * the log on its own, then joins the live fan-out exactly where the poller stands; positions are
 * compared on every hand-over, so nothing is delivered twice or skipped.
 *
 * Polling: local writes call `wake()`, other processes' writes are seen within `pollMs`.
 *
 * Coalescing: after a read that delivered changes, the next one waits until the delivery window
 * has passed, so a stream of writes is delivered in reads of everything committed meanwhile
 * and each subscriber's socket write carries many events. A socket write costs ~10–20 µs plus
 * ~1 ns per byte (loopback, 2-core machine; bench/RESULTS.md at bc5cbff, "Watch"), so the window grows with
 * the subscribers: subscribers × reads per second stays under `fanoutWritesPerSecond` (2,000:
 * 1,000 watchers → a read per 500 ms at most while changes stream in; 100 watchers → 50 ms),
 * never above `maxWindowMs`. With 4,000 (250 ms) the watch bench's "receiving every write"
 * ratio was ~0.75 instead of ~0.83, for a delivery delay p99 of ~250 ms instead of ~500 ms.
 * The backlog of one window can exceed one read (`batch`): two reads per window meant two
 * socket writes per subscriber, so up to `mergedReads` full reads in a row leave as one
 * delivery (readMerged), while what was read stays under `mergedBytes` of stored objects
 * (large objects go a read at a time). A lone write after a quiet window is delivered at once.
 *
 * Fan-out slices: handing one read to 1,000 subscribers (compressing it once, a socket write
 * each) is ~20–40 ms of work. Done in one go, it would hold every request that arrives meanwhile
 * for that long; instead the poller gives the event loop a turn (setImmediate: pending I/O runs
 * first) after every `sliceMs` of fan-out, so requests are served between slices. The next
 * read waits for the fan-out to end, so each subscriber still gets its reads in order.
 *
 * Fan-out groups (WatchHints in ../types.ts): subscribers that give a gate are kept per gate
 * key once they stand at the poller's position. Each read is tested once per key, and the
 * members of a group get the changes that passed in one `onBatch` call (the same array for all
 * of them); a group none of the changes passed is not visited at all.
 */
import { StoreError } from '../errors.js';
import type { ChangeEvent, FeedGate, OnFeedLost, Unsubscribe, WatchHints } from '../types.js';
import { expired, parsePosition, type ChangeLog } from './change-log.js';

/** The delivery window for `subscribers` subscribers (see "Coalescing" above), ms. */
export function deliveryWindowMs(subscribers: number, opts: SharedFeedOptions = {}): number {
  return Math.min(opts.maxWindowMs ?? 500, (subscribers * 1000) / (opts.fanoutWritesPerSecond ?? 2_000));
}

export interface SharedFeedOptions {
  /** Poll interval while anyone subscribes. Default 50 ms. */
  pollMs?: number;
  /**
   * Poll interval after a read that found the log settled (LogRead.settled): for adapters that
   * wake the feed when another process writes (MongoDB's change hints). Default: pollMs.
   */
  idlePollMs?: number;
  /** Budget of subscriber deliveries (socket writes) per second that sets the window. Default 2,000. */
  fanoutWritesPerSecond?: number;
  /** Longest delivery window. Default 500 ms. */
  maxWindowMs?: number;
  /** Changes read per query. Default 500. */
  batch?: number;
  /**
   * A read also stops once it holds this many bytes of objects (before and after each change),
   * live or catching up: 500 changes of 1 MiB objects would otherwise be ~1 GB in memory, for
   * the poller and again for each resuming watcher. Default 8 MiB.
   */
  readBytes?: number;
  /** Full reads in a row the poller delivers as one (see readMerged). Default 4. */
  mergedReads?: number;
  /** No further read is merged once the reads so far hold this many bytes of objects. Default 8 MiB. */
  mergedBytes?: number;
  /** Work of a fan-out between two turns of the event loop (see "Fan-out slices"). Default 2 ms. */
  sliceMs?: number;
}

interface Subscriber {
  /** Last position delivered (not kept up to date once the subscriber is in a group). */
  cursor: bigint;
  live: boolean;
  closed: boolean;
  onEvent: (e: ChangeEvent) => void;
  onLost?: OnFeedLost;
  hints?: WatchHints;
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
  /** When the pending timer fires (performance.now()). */
  private timerAt = 0;
  private polling = false;
  /** Earliest time the next read is wanted, noted while a read is running. */
  private againAt: number | undefined;
  /** When the last read that delivered changes started. */
  private deliveredAt = -Infinity;
  private closed = false;
  private readonly pollMs: number;
  private readonly idlePollMs: number;
  private readonly opts: SharedFeedOptions;
  private readonly batch: number;
  private readonly readBytes: number;
  private readonly mergedReads: number;
  private readonly mergedBytes: number;
  private readonly sliceMs: number;

  constructor(
    private readonly log: ChangeLog,
    opts: SharedFeedOptions = {},
  ) {
    this.pollMs = opts.pollMs ?? 50;
    this.idlePollMs = opts.idlePollMs ?? this.pollMs;
    this.opts = opts;
    this.batch = opts.batch ?? 500;
    this.readBytes = opts.readBytes ?? 8 * 2 ** 20;
    this.mergedReads = opts.mergedReads ?? 4;
    this.mergedBytes = opts.mergedBytes ?? 8 * 2 ** 20;
    this.sliceMs = opts.sliceMs ?? 2;
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

  async subscribe(from: string | undefined, onEvent: (e: ChangeEvent) => void, onLost?: OnFeedLost, hints?: WatchHints): Promise<Unsubscribe> {
    if (this.closed) throw new StoreError('Unavailable', 'the store is closed');
    let start: bigint;
    if (from === undefined || from === '') start = await this.log.head();
    else {
      const pos = parsePosition(from);
      if (pos === undefined) throw expired(from, 'is not a position of this change feed');
      await this.log.check(pos);
      start = pos;
    }
    const sub: Subscriber = { cursor: start, live: false, closed: false, onEvent, onLost, hints };
    this.subs.add(sub);
    if (this.cursor === undefined) {
      this.cursor = start;
      this.goLive(sub);
      this.schedule(performance.now());
    } else if (start >= this.cursor) {
      this.goLive(sub); // ahead of the poller: positions up to `start` are skipped on delivery
    } else {
      void this.catchUp(sub);
    }
    return () => this.drop(sub);
  }

  /** A local write committed: read now, or when the delivery window ends, instead of at the next tick. */
  wake(): void {
    if (this.subs.size) this.schedule(this.windowEnd());
  }

  /** Earliest time for the next read that may deliver: the delivery window after the last one. */
  private windowEnd(): number {
    return this.deliveredAt + deliveryWindowMs(this.subs.size, this.opts);
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
    const gate = sub.hints?.gate?.();
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

  /** Asks for a read at `at` (performance.now() time) or earlier, if one is not due sooner. */
  private schedule(at: number): void {
    if (this.polling) {
      this.againAt = Math.min(this.againAt ?? Infinity, at);
      return;
    }
    if (this.timer) {
      if (this.timerAt <= at) return;
      clearTimeout(this.timer);
    }
    this.timerAt = at;
    this.timer = setTimeout(() => void this.poll(), Math.max(0, at - performance.now()));
    this.timer.unref?.();
  }

  private async poll(): Promise<void> {
    this.timer = undefined;
    if (this.cursor === undefined || this.closed) return;
    this.polling = true;
    const started = performance.now();
    const from = this.cursor;
    let full = false;
    let settled = false;
    try {
      const { events, through, more, settled: quiet } = await this.readMerged(from);
      settled = quiet === true;
      // Everyone left and someone subscribed while this read ran: the feed restarted at another
      // position, and this read belongs to the old one.
      if (this.cursor === from) {
        full = more;
        if (events.length) this.deliveredAt = started;
        await this.deliverLive(events, through);
      }
    } catch (e) {
      // Expired concerns the position read from: not the subscribers of a feed that restarted
      // elsewhere meanwhile (their own positions were checked when they subscribed).
      if (e instanceof StoreError && e.code === 'Expired' && this.cursor === from) {
        for (const s of [...this.subs]) this.lose(s, e);
      }
      // otherwise (store unreachable): keep polling; subscribers resume where they were
    } finally {
      this.polling = false;
    }
    if (!this.subs.size) {
      this.againAt = undefined;
      return;
    }
    // A full read is caught up on at once; otherwise the next read comes at the next tick or
    // when a wake asked for it, and not before the delivery window ends.
    const tick = settled ? this.idlePollMs : this.pollMs;
    const next = full ? performance.now() : Math.max(this.windowEnd(), Math.min(this.againAt ?? Infinity, performance.now() + tick));
    this.againAt = undefined;
    this.schedule(next);
  }

  /**
   * Reads from `from` on, up to `mergedReads` full reads in a row (and no further read once
   * `mergedBytes` of objects are in hand), as one delivery: a backlog larger than one read (a
   * fast writer's changes over one delivery window) leaves in one socket write per subscriber
   * instead of one per read. `more`: the last read was full (`limit` positions, or stopped at
   * `readBytes`).
   */
  private async readMerged(from: bigint): Promise<{ events: ChangeEvent[]; through: bigint; more: boolean; settled?: boolean }> {
    const limit = BigInt(this.batch);
    const first = await this.log.read(from, this.batch, this.readBytes);
    let { events, through, bytes = 0, settled } = first;
    let more = through - from >= limit || first.more === true;
    for (let n = 1; more && n < this.mergedReads && bytes < this.mergedBytes && this.cursor === from; n++) {
      const at = through;
      const next = await this.log.read(at, this.batch, this.readBytes);
      events = events.concat(next.events);
      through = next.through;
      settled = next.settled;
      bytes += next.bytes ?? 0;
      more = through - at >= limit || next.more === true;
    }
    return { events, through, more, settled: settled && !more };
  }

  /**
   * Hands one read of the log to the groups, then to the loose subscribers, and moves the
   * poller's position to `through` (past aborted writes too, so a run of them is not read again).
   * The position moves first: whoever subscribes or catches up while the fan-out is under way
   * stands after this read. The groups' members, as they are when the read arrives, get it in
   * slices of about `sliceMs` of work with a turn of the event loop between them (see "Fan-out
   * slices" above).
   */
  private async deliverLive(read: readonly ChangeEvent[], through: bigint): Promise<void> {
    if (this.cursor === undefined) return;
    let from = 0;
    while (from < read.length && BigInt(read[from]!.resourceVersion) <= this.cursor) from++;
    const events = from ? read.slice(from) : read;
    const last = events.length ? BigInt(events[events.length - 1]!.resourceVersion) : this.cursor;
    this.cursor = through > last ? through : last;
    if (!events.length) return;
    const at = this.cursor;
    // Who gets this read is settled now: whoever joins a group during the fan-out stands
    // after it (the position moved above) and is left out.
    const plan = [...this.groups.values()].map((g) => ({ gate: g.gate, members: [...g.members] }));
    let sliceStart = performance.now();
    for (const g of plan) {
      const passed = passing(g.gate, events);
      if (!passed.length) continue;
      for (const s of g.members) {
        handBatch(s, passed, g.members.length);
        if (performance.now() - sliceStart < this.sliceMs) continue;
        await new Promise((r) => setImmediate(r));
        // Everyone left and the feed restarted elsewhere: this read is not theirs.
        if (this.cursor !== at) return;
        sliceStart = performance.now();
      }
    }
    for (const s of this.loose) {
      for (let i = 0; i < events.length && !s.closed; i++) {
        const e = events[i]!;
        const pos = BigInt(e.resourceVersion);
        if (pos <= s.cursor) continue;
        s.cursor = pos;
        try {
          s.onEvent(e);
        } catch {
          // a failing subscriber must not break the poller or other subscribers
        }
        this.regroup(s);
        if (s.group !== undefined) {
          // In its group now, which has had this read already: the rest as the group gets it.
          const rest = passing(this.groups.get(s.group)!.gate, events.slice(i + 1));
          if (rest.length) handBatch(s, rest, 1);
          break;
        }
      }
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
        const before = sub.cursor;
        const { events, through } = await this.log.read(before, this.batch, this.readBytes);
        if (sub.closed) return;
        for (const e of events) {
          const pos = BigInt(e.resourceVersion);
          if (pos <= sub.cursor) continue;
          sub.cursor = pos;
          sub.onEvent(e);
          if (sub.closed) return;
        }
        if (through > sub.cursor) sub.cursor = through;
        if (sub.cursor === before) await new Promise((r) => setTimeout(r, this.pollMs));
      }
    } catch (e) {
      this.lose(sub, e instanceof Error ? e : new Error(String(e)));
    }
  }
}

/** The changes of `events` the gate lets through (every one it fails on included). */
function passing(gate: FeedGate, events: readonly ChangeEvent[]): readonly ChangeEvent[] {
  const out: ChangeEvent[] = [];
  for (const e of events) {
    let pass: boolean;
    try {
      pass = gate.pass(e);
    } catch {
      pass = true;
    }
    if (pass) out.push(e);
  }
  return out.length === events.length ? events : out;
}

/** Changes that passed a member's group gate: in one onBatch call, or one onEvent each. */
function handBatch(s: Subscriber, events: readonly ChangeEvent[], audience: number): void {
  if (s.closed) return;
  const onBatch = s.hints?.onBatch;
  if (onBatch) {
    try {
      onBatch(events, audience);
    } catch {
      // a failing subscriber must not break the poller or other subscribers
    }
    return;
  }
  for (const e of events) {
    if (s.closed) return;
    try {
      s.onEvent(e);
    } catch {
      // as above
    }
  }
}
