/** Failed-login limits (docs/API.md §2): per username and address, and per address; 429 + Retry-After. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_LOGIN_LIMITS, LoginLimiter } from '../../src/authentication/login-limiter.js';
import { TooManyRequests } from '../../src/errors/index.js';
import { basicAuth, call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { gql } from '../graphql/helpers.js';
import { createUser } from '../helpers/rbac.js';

const PERMISSIONS = '/apis/api.console.svc.run/v1alpha1/users/-/permissions';

describe('LoginLimiter', () => {
  it('has the contract limits by default', () => {
    expect(DEFAULT_LOGIN_LIMITS).toEqual({ perUser: 10, perAddress: 100, windowMs: 60_000 });
  });

  it('blocks a (user, address) pair after 10 failures within the window, until they leave it', () => {
    let now = 1_000_000;
    const l = new LoginLimiter(DEFAULT_LOGIN_LIMITS, () => now);
    for (let i = 0; i < 10; i++) {
      expect(() => l.check('u', '1.1.1.1')).not.toThrow();
      l.fail('u', '1.1.1.1');
      now += 1000;
    }
    let err: unknown;
    try {
      l.check('u', '1.1.1.1');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(TooManyRequests);
    expect((err as TooManyRequests).status).toBe(429);
    // the first failure was at t0, now is t0+10s: it leaves the window 50 s from now
    expect((err as TooManyRequests).headers['retry-after']).toBe('50');
    expect(() => l.check('v', '1.1.1.1')).not.toThrow(); // other user, same address
    expect(() => l.check('u', '2.2.2.2')).not.toThrow(); // same user, other address
    now += 50_000;
    expect(() => l.check('u', '1.1.1.1')).not.toThrow();
  });

  it('blocks an address after 100 failures within the window, for every username', () => {
    let now = 0;
    const l = new LoginLimiter(DEFAULT_LOGIN_LIMITS, () => now);
    for (let i = 0; i < 100; i++) l.fail(`user${i}`, '3.3.3.3');
    expect(() => l.check('someone-else', '3.3.3.3')).toThrow(TooManyRequests);
    expect(() => l.check('someone-else', '4.4.4.4')).not.toThrow();
    now = 60_000;
    expect(() => l.check('someone-else', '3.3.3.3')).not.toThrow();
  });

  it('counts nothing below the limits and nothing for successes', () => {
    const l = new LoginLimiter(DEFAULT_LOGIN_LIMITS, () => 0);
    for (let i = 0; i < 9; i++) l.fail('u', 'a');
    expect(() => l.check('u', 'a')).not.toThrow();
  });
});

describe('failed logins over HTTP', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway('embedded', { loginLimits: { perAddress: 25 } });
  });
  afterAll(() => gw?.dispose());

  it('429 with Retry-After after 10 failures for one user; the right password is then refused too; other users unaffected', async () => {
    const good = await createUser(gw, 'target', 'the-real-password');
    const other = await createUser(gw, 'bystander', 'another-password');
    for (let i = 0; i < 10; i++) {
      expect((await call(gw, 'GET', PERMISSIONS, undefined, { authorization: basicAuth('target', `guess-${i}`) })).status).toBe(401);
    }
    const blocked = await call(gw, 'GET', PERMISSIONS, undefined, { authorization: basicAuth('target', 'guess-x') });
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(blocked.headers.get('content-type')).toBe('application/problem+json');
    expect((await call(gw, 'GET', PERMISSIONS, undefined, { authorization: good })).status).toBe(429);
    const gq = await gql(gw, '{ me { username } }', undefined, { authorization: basicAuth('target', 'guess-y') });
    expect(gq.status).toBe(429);
    expect(gq.body.errors?.[0]?.extensions?.code).toBe('TOO_MANY_REQUESTS');
    expect((await call(gw, 'GET', PERMISSIONS, undefined, { authorization: other })).status).toBe(200);
  });

  it('429 for every login from an address over its limit (configured to 25 here)', async () => {
    for (let i = 0; i < 25; i++) await call(gw, 'GET', PERMISSIONS, undefined, { authorization: basicAuth(`nobody${i}`, 'x') });
    const any = await call(gw, 'GET', PERMISSIONS, undefined, { authorization: basicAuth('bystander', 'another-password') });
    expect(any.status).toBe(429);
    expect(any.headers.get('retry-after')).toMatch(/^\d+$/);
    // anonymous requests are not logins
    expect((await call(gw, 'GET', PERMISSIONS, undefined, { authorization: '' })).status).toBe(200);
  });
});
