/**
 * Password hashes at OWASP's scrypt cost (N = 2^17, r = 8, p = 1), and hashes made at an older
 * cost still verify and are rehashed at the next successful login, keeping the sessions of that
 * password open (docs/API.md §2). On both stores, at the production cost (other suites run a
 * lower one: test/helpers/gateway.ts).
 */
import { randomBytes, scryptSync } from 'node:crypto';
import { DEFAULT_COST } from '../../src/authentication/password.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuth, call, startTestGateway, STORES, type TestGateway } from '../helpers/gateway.js';
import { createUser } from '../helpers/rbac.js';
import { gql, wsClient } from '../graphql/helpers.js';
import { sleep } from '../watch/helpers.js';

const PERMISSIONS = '/apis/api.console.svc.run/v1alpha1/users/-/permissions';

/** A hash in the stored form at the old cost (N = 2^14). */
function oldHash(password: string): string {
  const salt = randomBytes(16);
  const key = scryptSync(password, salt, 32, { N: 2 ** 14, r: 8, p: 1 });
  return `$scrypt$N=16384,r=8,p=1$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

describe.each(STORES)('password cost (%s)', (kind) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(kind, { passwordCost: DEFAULT_COST });
  });
  afterAll(() => gw?.dispose());

  const users = () => gw.registry.find('', 'v1alpha1', 'users')!.store;
  const storedHash = async (name: string) => ((await users().get(name))!.spec as { password: string }).password;

  it('hashes new passwords at N=2^17, r=8, p=1', async () => {
    await createUser(gw, 'fresh', 'fresh-password');
    expect(await storedHash('fresh')).toMatch(/^\$scrypt\$N=131072,r=8,p=1\$/);
    expect((await call(gw, 'GET', PERMISSIONS, undefined, { authorization: basicAuth('fresh', 'fresh-password') })).status).toBe(200);
  });

  it('an old-cost hash still verifies, is rehashed at the login, and its sessions stay open', async () => {
    await createUser(gw, 'veteran', 'placeholder-password');
    const user = (await users().get('veteran'))!;
    const old = oldHash('veteran-password');
    const v = user.metadata.version!;
    await users().update({ ...user, metadata: { ...user.metadata, version: v + 1 }, spec: { ...(user.spec as object), password: old } }, v);
    const auth = basicAuth('veteran', 'veteran-password');
    // a graphql-ws session logs in with it (the first check of this header)
    const client = wsClient(gw, { authorization: auth });
    try {
      const me = async () => {
        for await (const r of client.iterate({ query: '{ me { username } }' })) return (r as any).data?.me?.username;
      };
      expect(await me()).toBe('veteran');
      const salt = old.split('$')[3];
      const end = Date.now() + 20_000;
      while ((await storedHash('veteran')) === old && Date.now() < end) await sleep(100);
      const rehashed = await storedHash('veteran');
      expect(rehashed).toMatch(/^\$scrypt\$N=131072,r=8,p=1\$/);
      expect(rehashed.split('$')[3]).toBe(salt);
      // a change of users moves the security generation: the session is checked again and holds
      await createUser(gw, 'bystander');
      await sleep(1500);
      expect(await me()).toBe('veteran');
      expect((await call(gw, 'GET', PERMISSIONS, undefined, { authorization: auth })).status).toBe(200);
      expect((await gql(gw, '{ me { username } }', undefined, { authorization: basicAuth('veteran', 'wrong') })).status).toBe(401);
    } finally {
      await client.dispose();
    }
  });
});
