/**
 * The authenticator's credential memory (issue 8 "a request must not pay for a slow hash"):
 * verified headers are remembered; a burst of identical requests on a cold memory shares one
 * verification; after the security generation moves a remembered header is checked again by a
 * store read (no hash); limits still apply.
 */
import { describe, expect, it } from 'vitest';
import { createAuthenticator } from '../../src/authentication/authenticate.js';
import { SecurityGeneration } from '../../src/authentication/generation.js';
import { LoginLimiter } from '../../src/authentication/login-limiter.js';
import { hashPassword } from '../../src/authentication/password.js';
import type { ApiObject } from '../../src/store/object.js';

const basic = (u: string, p: string) => `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`;

async function setup() {
  const users = new Map<string, ApiObject>();
  users.set('ann', { apiVersion: 'v1alpha1', kind: 'User', metadata: { name: 'ann' }, spec: { password: await hashPassword('ann-password') } } as ApiObject);
  let lookups = 0;
  const generation = await SecurityGeneration.open(undefined);
  const limiter = new LoginLimiter({ perUser: 3, perAddress: 100, windowMs: 60_000 });
  const authenticate = createAuthenticator({
    users: {
      async get(name) {
        lookups++;
        return users.get(name) ?? null;
      },
    },
    tokens: { verify: async () => undefined, lookup: async () => undefined },
    generation,
    limiter,
  });
  return { authenticate, generation, lookups: () => lookups };
}

describe('createAuthenticator', () => {
  it('a burst of identical requests on a cold memory verifies once; later requests are answered from memory', async () => {
    const { authenticate, lookups } = await setup();
    const callers = await Promise.all(Array.from({ length: 20 }, () => authenticate(basic('ann', 'ann-password'), { address: '10.0.0.1' })));
    expect(callers.every((c) => c.username === 'ann' && c.authenticated)).toBe(true);
    expect(lookups()).toBe(1);
    await authenticate(basic('ann', 'ann-password'), { address: '10.0.0.2' });
    expect(lookups()).toBe(1);
  });

  it('shares a failed verification too (401 for each), and a moved generation reads the user again', async () => {
    const { authenticate, generation, lookups } = await setup();
    const wrong = await Promise.allSettled(Array.from({ length: 5 }, () => authenticate(basic('ann', 'nope'), { address: '10.0.0.1' })));
    expect(wrong.map((r) => (r.status === 'rejected' ? (r.reason as { status: number }).status : 200))).toEqual([401, 401, 401, 401, 401]);
    expect(lookups()).toBe(1);
    await authenticate(basic('ann', 'ann-password'));
    expect(lookups()).toBe(2);
    await generation.bump();
    await authenticate(basic('ann', 'ann-password'));
    expect(lookups()).toBe(3);
  });

  it('requests joining or answered from memory are still refused over the failed-login limits', async () => {
    const { authenticate } = await setup();
    const good = basic('ann', 'ann-password');
    await authenticate(good, { address: '10.0.0.9' });
    for (let i = 0; i < 3; i++) await expect(authenticate(basic('ann', `guess-${i}`), { address: '10.0.0.9' })).rejects.toMatchObject({ status: 401 });
    await expect(authenticate(good, { address: '10.0.0.9' })).rejects.toMatchObject({ status: 429 });
    await expect(authenticate(good, { address: '10.0.0.8' })).resolves.toMatchObject({ username: 'ann' });
  });
});
