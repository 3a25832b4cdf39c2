/**
 * The concurrent-watch quota is per gateway and takes its limit from GatewayOptions.limits:
 * two gateways in one process with different `watchesPerUser` each enforce their own, and the
 * watches open on one do not count on the other.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { openWatch, sleep, type Watcher } from './helpers.js';

async function settledCount(gw: TestGateway, want: number): Promise<number> {
  for (let i = 0; i < 100 && gw.watches.count() !== want; i++) await sleep(50);
  return gw.watches.count();
}

describe('concurrent watches per user, per gateway (embedded)', () => {
  let two: TestGateway;
  let three: TestGateway;
  beforeAll(async () => {
    [two, three] = await Promise.all([
      startTestGateway('embedded', { limits: { watchesPerUser: 2 } }),
      startTestGateway('embedded', { limits: { watchesPerUser: 3 } }),
    ]);
  });
  afterAll(async () => {
    await two?.dispose();
    await three?.dispose();
  });

  it('each gateway honours its own limits.watchesPerUser; one gateway’s watches do not count on the other', async () => {
    const open: Watcher[] = [];
    const attempt = async (gw: TestGateway) => {
      const w = openWatch(gw, '?labelSelector=people.example.com/quota=q');
      open.push(w);
      return w.opened.then(
        () => 'open',
        (e: Error) => e.message,
      );
    };
    try {
      expect(await attempt(two)).toBe('open');
      expect(await attempt(two)).toBe('open');
      expect(await attempt(two)).toBe('HTTP 429');
      expect(await settledCount(two, 2)).toBe(2);
      // The other gateway starts from zero and allows three.
      expect(await attempt(three)).toBe('open');
      expect(await attempt(three)).toBe('open');
      expect(await attempt(three)).toBe('open');
      expect(await attempt(three)).toBe('HTTP 429');
      expect(await settledCount(three, 3)).toBe(3);
      expect(two.watches.count()).toBe(2);
    } finally {
      for (const w of open) w.close();
    }
  }, 30_000);
});
