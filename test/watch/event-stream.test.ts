/** The callback → AsyncIterator bridge behind subscriptions. */
import { describe, expect, it, vi } from 'vitest';
import { createEventStream } from '../../src/graphql/event-stream.js';

describe('event stream', () => {
  it('delivers pushed values in order, before and after a pull waits', async () => {
    const s = createEventStream<number>();
    s.push(1);
    const pending = s.next();
    expect(await pending).toEqual({ value: 1, done: false });
    const waiting = s.next();
    s.push(2);
    expect(await waiting).toEqual({ value: 2, done: false });
  });

  it('runs the teardown once when the consumer stops, even if registered late', async () => {
    const s = createEventStream<number>();
    const teardown = vi.fn();
    s.onClose(teardown);
    await s.return!();
    await s.return!();
    expect(teardown).toHaveBeenCalledTimes(1);
    const late = vi.fn();
    s.onClose(late);
    expect(late).toHaveBeenCalledTimes(1);
    expect(await s.next()).toEqual({ value: undefined, done: true });
  });

  it('drains queued values after end()', async () => {
    const s = createEventStream<number>();
    s.push(1);
    s.end();
    s.push(2);
    expect(await s.next()).toEqual({ value: 1, done: false });
    expect(await s.next()).toEqual({ value: undefined, done: true });
  });

  it('ends with a final value when the consumer falls too far behind', async () => {
    const teardown = vi.fn();
    const s = createEventStream<number>({ maxQueued: 2, onOverflow: () => -1 });
    s.onClose(teardown);
    for (let i = 0; i < 5; i++) s.push(i);
    const seen: number[] = [];
    for await (const v of s) seen.push(v);
    expect(seen).toEqual([0, 1, -1]);
    expect(teardown).toHaveBeenCalledTimes(1);
  });
});
