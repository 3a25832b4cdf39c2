/**
 * store/mongo/bounded.ts TimeBounds: driver operations that start close together share one
 * abort signal, and each is still aborted no sooner than its bound.
 */
import { describe, expect, it } from 'vitest';
import { SHARE_MS, TimeBounds } from '../../src/store/mongo/bounded.js';

describe('TimeBounds', () => {
  it('shares a signal within SHARE_MS per bound, and a later operation gets a new one', async () => {
    const bounds = new TimeBounds();
    const a = bounds.signal(5000);
    expect(bounds.signal(5000)).toBe(a);
    expect(bounds.signal(3000)).not.toBe(a); // another bound, another signal
    await new Promise((r) => setTimeout(r, SHARE_MS + 20));
    expect(bounds.signal(5000)).not.toBe(a);
    expect(new TimeBounds().signal(5000)).not.toBe(bounds.signal(5000)); // one set per store
  });

  it('aborts no sooner than the bound of the last operation that took the signal', async () => {
    const bounds = new TimeBounds();
    const first = bounds.signal(300);
    await new Promise((r) => setTimeout(r, SHARE_MS - 15));
    const started = performance.now();
    const last = bounds.signal(300);
    expect(last).toBe(first);
    const aborted = await new Promise<number>((r) => last.addEventListener('abort', () => r(performance.now())));
    expect(aborted - started).toBeGreaterThanOrEqual(300 - 2); // timer granularity
    expect(last.reason).toBeInstanceOf(DOMException);
    expect((last.reason as DOMException).name).toBe('TimeoutError');
  });

  it('many operations on one signal print no listener-leak warning', async () => {
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on('warning', onWarning);
    try {
      const signal = new TimeBounds().signal(5000);
      const listeners = Array.from({ length: 50 }, () => () => undefined);
      for (const l of listeners) signal.addEventListener('abort', l);
      await new Promise((r) => setImmediate(r));
      for (const l of listeners) signal.removeEventListener('abort', l);
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings.map((w) => w.name)).not.toContain('MaxListenersExceededWarning');
  });
});
