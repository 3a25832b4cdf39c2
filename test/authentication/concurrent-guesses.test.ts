/**
 * Concurrent guesses (docs/API.md §2): password checks still running count against the
 * failed-login limits, so of any number of concurrent guesses for one username from one
 * address at most 10 are checked against the password; the rest get 429. The same for the
 * per-address limit (configured lower here, to keep the number of slow hashes small). On both
 * stores.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_LOGIN_LIMITS, LoginLimiter } from '../../src/authentication/login-limiter.js';
import { basicAuth, call, startTestGateway, STORES, type TestGateway } from '../helpers/gateway.js';
import { createUser } from '../helpers/rbac.js';

const PERMISSIONS = '/apis/api.console.svc.run/v1alpha1/users/-/permissions';

const statuses = async (gw: TestGateway, auths: string[]) => {
  const got = await Promise.all(auths.map((authorization) => call(gw, 'GET', PERMISSIONS, undefined, { authorization })));
  const count = (s: number) => got.filter((r) => r.status === s).length;
  return { 401: count(401), 429: count(429), other: got.length - count(401) - count(429), retryAfter: got.find((r) => r.status === 429)?.headers.get('retry-after') };
};

describe('LoginLimiter.attempt', () => {
  it('counts password checks in flight: the 11th concurrent attempt of a pair is refused until one ends', () => {
    const l = new LoginLimiter(DEFAULT_LOGIN_LIMITS, () => 0);
    const running = Array.from({ length: 10 }, () => l.attempt('u', 'a'));
    expect(() => l.attempt('u', 'a')).toThrow(expect.objectContaining({ status: 429, headers: { 'retry-after': '1' } }));
    expect(() => l.attempt('v', 'a')).not.toThrow(); // another user of the address
    running[0]!(false); // a success frees its place
    const next = l.attempt('u', 'a');
    for (const done of [...running.slice(1), next]) done(true); // ten failures: blocked for the window
    expect(() => l.attempt('u', 'a')).toThrow(expect.objectContaining({ headers: { 'retry-after': '60' } }));
  });
});

describe.each(STORES)('concurrent failed logins (%s)', (kind) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(kind, { loginLimits: { perAddress: 15 } });
  });
  afterAll(() => gw?.dispose());
  /** Failures of this address so far (the per-address limit counts them all). */
  let failed = 0;

  it('200 concurrent wrong passwords for one user: at most 10 are checked, the rest get 429', async () => {
    await createUser(gw, 'target', 'the-right-password');
    const got = await statuses(gw, Array.from({ length: 200 }, (_, i) => basicAuth('target', `guess-${i}`)));
    expect(got.other).toBe(0);
    expect(got[401]).toBeGreaterThan(0);
    expect(got[401]).toBeLessThanOrEqual(10);
    expect(got[429]).toBe(200 - got[401]);
    failed += got[401];
    expect(Number(got.retryAfter)).toBeGreaterThan(0);
    // the right password too is refused now
    expect((await call(gw, 'GET', PERMISSIONS, undefined, { authorization: basicAuth('target', 'the-right-password') })).status).toBe(429);
  }, 60_000);

  it('concurrent guesses for many users from one address: at most the per-address limit are checked', async () => {
    const got = await statuses(gw, Array.from({ length: 60 }, (_, i) => basicAuth(`nobody-${i}`, 'guess')));
    expect(got.other).toBe(0);
    expect(got[401]).toBeGreaterThan(0);
    expect(failed + got[401]).toBeLessThanOrEqual(15);
    expect(got[429]).toBe(60 - got[401]);
  }, 60_000);
});
