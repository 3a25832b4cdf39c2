/**
 * The shared feed layer (src/store/feed/shared-feed.ts) above a real change log: the embedded
 * store's EmbeddedChangeLog over a real SQLite database in a temporary directory. The only
 * thing added is fault injection around the real log: a read can be held open (its answer
 * withheld) until the test lets it go, as a slow database round trip would.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createChangeTables, EmbeddedChangeLog } from '../../src/store/embedded/changes.js';
import { openDatabase, type DB } from '../../src/store/embedded/sqlite.js';
import { DEFAULT_RETENTION, SharedFeed, type ChangeLog, type LogRead } from '../../src/store/feed/index.js';
import { StoreError } from '../../src/store/errors.js';
import type { ChangeEvent } from '../../src/store/types.js';
import { until, widget } from './contract.js';

/** The real log; `holdNextRead()` makes the next read run, but keeps its answer until released. */
class HeldLog implements ChangeLog {
  private held: { reached: (after: bigint) => void; released: Promise<void>; fail?: Error } | undefined;

  constructor(private readonly inner: ChangeLog) {}

  /**
   * The next read runs but answers only on `release()`; with `fail`, it then throws that error
   * instead (as MongoDB's log throws Expired for a start below the retention floor).
   */
  holdNextRead(fail?: Error): { reached: Promise<bigint>; release: () => void } {
    let reached!: (after: bigint) => void;
    let release!: () => void;
    const r = new Promise<bigint>((res) => (reached = res));
    const released = new Promise<void>((res) => (release = res));
    this.held = { reached, released, fail };
    return { reached: r, release };
  }

  async read(after: bigint, limit: number, maxBytes?: number): Promise<LogRead> {
    const held = this.held;
    this.held = undefined;
    const answer = await this.inner.read(after, limit, maxBytes);
    if (held) {
      held.reached(after);
      await held.released;
      if (held.fail) throw held.fail;
    }
    return answer;
  }

  head(): Promise<bigint> {
    return this.inner.head();
  }

  horizon(): Promise<bigint> {
    return this.inner.horizon();
  }

  check(from: bigint): Promise<void> {
    return this.inner.check(from);
  }
}


describe('shared feed above the embedded change log', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  async function openLog(): Promise<{ db: DB; log: EmbeddedChangeLog }> {
    const dir = await mkdtemp(join(tmpdir(), 'svc-shared-feed-'));
    const db = openDatabase(dir, 5000);
    cleanups.push(async () => {
      db.close();
      await rm(dir, { recursive: true, force: true });
    });
    createChangeTables(db);
    return { db, log: new EmbeddedChangeLog(db, 1, DEFAULT_RETENTION) };
  }

  it('drops a read that was in flight when everyone left and the feed restarted at another position', async () => {
    const { log } = await openLog();
    /** Commits one change of object `name` (autocommit: its own transaction, as a store write). */
    const write = (name: string) => log.append('ADDED', JSON.stringify(widget(name)), null);
    for (let i = 1; i <= 6; i++) write(`w${i}`); // positions 1..6 (one model, one slot)
    expect(await log.head()).toBe(6n);

    const held = new HeldLog(log);
    const feed = new SharedFeed(held, { pollMs: 20 });
    cleanups.push(async () => feed.close());
    const seen = (into: string[]) => (e: ChangeEvent) => into.push(`${e.resourceVersion} ${e.object.metadata.name}`);

    // A watches from 4: the poller's first read (after 4) runs and finds 5 and 6; its answer is held.
    const gotA: string[] = [];
    const hold = held.holdNextRead();
    const unsubA = await feed.subscribe('4', seen(gotA));
    expect(await hold.reached).toBe(4n);

    // A leaves while that read is out, and B subscribes from 2: the feed restarts at 2. (B starts
    // before A's position on purpose: from a later position, delivery drops the old read's
    // changes at or before it anyway, guard or not. From an earlier one, delivering the old read
    // would hand B 5 and 6 and move the feed past 3 and 4, which B would never get.)
    unsubA();
    expect(feed.size).toBe(0);
    const gotB: string[] = [];
    const unsubB = await feed.subscribe('2', seen(gotB));
    cleanups.push(async () => unsubB());

    // The old read answers (5 and 6, read after 4): it belongs to A's feed, not to B's.
    hold.release();
    write('w7');
    await until(() => gotB.some((g) => g.endsWith(' w7')), 5000);

    // B gets exactly what follows 2, each change once and in order; nothing at or before 2.
    expect(gotB).toEqual(['3 w3', '4 w4', '5 w5', '6 w6', '7 w7']);
    expect(gotA).toEqual([]);
  });

  it('an Expired answer to a read of the old position does not end the watchers of the restarted feed', async () => {
    const { log } = await openLog();
    const write = (name: string) => log.append('ADDED', JSON.stringify(widget(name)), null);
    for (let i = 1; i <= 4; i++) write(`w${i}`);
    const held = new HeldLog(log);
    const feed = new SharedFeed(held, { pollMs: 20 });
    cleanups.push(async () => feed.close());

    // A's read (after 2) is held and will answer Expired: the old position fell out of retention.
    const hold = held.holdNextRead(new StoreError('Expired', 'position 2 is no longer held'));
    const unsubA = await feed.subscribe('2', () => undefined);
    expect(await hold.reached).toBe(2n);
    unsubA();
    // B watches from 3, a position the log holds.
    const gotB: string[] = [];
    let lostB: unknown;
    const unsubB = await feed.subscribe('3', (e) => gotB.push(`${e.resourceVersion} ${e.object.metadata.name}`), (err) => (lostB = err));
    cleanups.push(async () => unsubB());
    hold.release();
    write('w5');
    await until(() => gotB.length >= 2 || lostB !== undefined, 5000);
    expect(lostB).toBeUndefined();
    expect(gotB).toEqual(['4 w4', '5 w5']);
  });
  /**
   * A live member of the feed's group `key` (every change passes): the size of each batch it
   * got and the names in them, in order; `then` runs after each batch is recorded.
   */
  async function groupMember(feed: SharedFeed, key = 'all', then?: () => void) {
    const batches: number[] = [];
    const names: string[] = [];
    const unsub = await feed.subscribe(undefined, () => undefined, undefined, {
      gate: () => ({ key, pass: () => true }),
      onBatch: (events) => {
        batches.push(events.length);
        names.push(...events.map((e) => e.object.metadata.name));
        then?.();
      },
    });
    cleanups.push(async () => unsub());
    return { batches, names, unsub };
  }

  /** ADDED changes of `n` objects committed together: the poller finds them all at its next read. */
  function burst(db: DB, log: EmbeddedChangeLog, n: number, object: (i: number) => object, from = 0): void {
    db.transaction(() => {
      for (let i = from; i < from + n; i++) log.append('ADDED', JSON.stringify(object(i)), null);
    })();
  }
  const small = (tag: string) => (i: number) => widget(`${tag}-${i}`);
  const big = (size: number) => (i: number) => ({ ...widget(`big-${i}`), spec: { note: `${i % 10}`.repeat(size) } });

  it('a backlog of several full reads reaches a group in one batch, at most `mergedReads` reads at a time', async () => {
    const { db, log } = await openLog();
    const feed = new SharedFeed(log, { pollMs: 20, batch: 100, mergedReads: 4 });
    cleanups.push(async () => feed.close());
    const { batches, names } = await groupMember(feed);

    // 3½ reads' worth: one delivery, not four.
    burst(db, log, 350, small('a'));
    await until(() => names.length >= 350, 5000);
    expect(batches).toEqual([350]);
    // 5½ reads' worth: four reads as one delivery, then the rest at once (the last read was full).
    burst(db, log, 550, small('b'));
    await until(() => names.length >= 900, 5000);
    expect(batches).toEqual([350, 400, 150]);
    expect(names).toEqual([...Array.from({ length: 350 }, (_, i) => `a-${i}`), ...Array.from({ length: 550 }, (_, i) => `b-${i}`)]);
  });

  it('large objects are not merged past `mergedBytes`: a read at a time once the budget is used', async () => {
    const { db, log } = await openLog();
    const feed = new SharedFeed(log, { pollMs: 20, batch: 10, mergedReads: 4, mergedBytes: 300_000 });
    cleanups.push(async () => feed.close());
    const { batches } = await groupMember(feed);
    // 35 changes of ~20 KB: a read of 10 holds ~200 KB, so a second read is merged (under
    // 300 KB before it) and a third is not.
    burst(db, log, 35, big(20_000));
    await until(() => batches.reduce((a, b) => a + b, 0) >= 35, 5000);
    expect(batches).toEqual([20, 15]);
  });

  it('a fan-out gives the event loop turns between slices; members joining or leaving meanwhile get each change once, in order', async () => {
    const { db, log } = await openLog();
    // sliceMs 0: a turn of the event loop after every member.
    const feed = new SharedFeed(log, { pollMs: 20, sliceMs: 0 });
    cleanups.push(async () => feed.close());
    const trace: string[] = [];
    const members = new Map<string, Awaited<ReturnType<typeof groupMember>>>();
    let onFirst: (() => void) | undefined;
    const member = async (id: string, key = 'all') => {
      const m = await groupMember(feed, key, () => {
        trace.push(id);
        const first = onFirst;
        onFirst = undefined;
        first?.();
      });
      members.set(id, m);
    };
    const got = (id: string) => members.get(id)?.names ?? [];
    for (const id of ['m0', 'm1', 'm2', 'm3', 'm4']) await member(id);
    // A second selector's group, whose turn comes after the first's.
    await member('o0', 'other');

    // While the first member handles the read: an immediate is queued, m3 leaves, f and g join
    // (at the head, after this read; g in the group whose turn is still to come), and more
    // changes commit.
    onFirst = () => {
      setImmediate(() => trace.push('turn'));
      members.get('m3')!.unsub();
      void member('f');
      void member('g', 'other');
      burst(db, log, 2, small('b'));
    };
    burst(db, log, 3, small('a'));
    await until(() => ['m4', 'f', 'g', 'o0'].every((id) => got(id).includes('b-1')), 5000);

    // The immediate ran before the fan-out of the first read was over.
    const firstRound = trace.slice(0, trace.indexOf('m4') + 1);
    expect(firstRound[0]).toBe('m0');
    expect(firstRound).toContain('turn');
    const a = ['a-0', 'a-1', 'a-2'];
    const b = ['b-0', 'b-1'];
    for (const id of ['m0', 'm1', 'm2', 'm4']) expect(got(id)).toEqual([...a, ...b]);
    expect(got('o0')).toEqual([...a, ...b]);
    expect(got('m3')).toEqual([]);
    expect(got('f')).toEqual(b);
    expect(got('g')).toEqual(b);
  });

  it('a read stops at its byte budget, on the log and in the feed: live and catching-up subscribers still get every change once, in order', async () => {
    const { db, log } = await openLog();
    burst(db, log, 7, big(100_000));
    // The log: the change that brings a read to the budget is the last one read.
    const first = await log.read(0n, 500, 250_000);
    expect(first.events.map((e) => e.object.metadata.name)).toEqual(['big-0', 'big-1', 'big-2']);
    expect(first.more).toBe(true);
    expect(first.through).toBe(3n);
    const rest = await log.read(first.through, 500, 250_000);
    expect(rest.events.map((e) => e.object.metadata.name)).toEqual(['big-3', 'big-4', 'big-5']);
    const last = await log.read(rest.through, 500, 250_000);
    expect(last.events.map((e) => e.object.metadata.name)).toEqual(['big-6']);
    expect(last.more).toBe(false);
    expect((await log.read(0n, 500)).events).toHaveLength(7);

    // The feed: a live group member and a subscriber resuming from 0 (catching up on its own).
    const feed = new SharedFeed(log, { pollMs: 20, readBytes: 250_000, mergedReads: 1 });
    cleanups.push(async () => feed.close());
    const { batches, names: live } = await groupMember(feed);
    const resumed: string[] = [];
    const unsubResumed = await feed.subscribe('0', (e) => void resumed.push(e.object.metadata.name));
    cleanups.push(async () => unsubResumed());
    burst(db, log, 7, big(100_000), 7);
    await until(() => live.length >= 7 && resumed.length >= 14, 5000);
    const names = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => `big-${from + i}`);
    expect(live).toEqual(names(7, 14));
    expect(batches).toEqual([3, 3, 1]);
    expect(resumed).toEqual(names(0, 14));
  });
});
