/**
 * Two gateways on one MongoDB database: a grant or revocation (or a password change) through
 * one is honoured by the other after its next poll of the security generation, also by the
 * streams already open on the other (they end with ERROR 403 / FORBIDDEN).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuth, call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { bind, createRole, createUser } from '../helpers/rbac.js';
import { expectForbiddenEnd, openStreams } from './streams.js';

const PERSONS = '/apis/people.example.com/v1alpha1/persons';

async function eventually(check: () => Promise<boolean>, ms = 10_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return check();
}

describe('two gateways on one database (mongodb)', () => {
  let a: TestGateway;
  let b: TestGateway;
  beforeAll(async () => {
    a = await startTestGateway('mongodb');
    b = await startTestGateway('mongodb', { mongodbUrl: a.mongodbUrl });
  });
  afterAll(async () => {
    await b?.close();
    await a?.dispose();
  });

  it('a grant, a revocation and a password change through one gateway reach the other', async () => {
    const auth = await createUser(a, 'roamer', 'first-secret');
    const status = async (gw: TestGateway, authz = auth) => (await call(gw, 'GET', PERSONS, undefined, { authorization: authz })).status;
    expect(await status(b)).toBe(403); // b now remembers the denial
    expect((await bind(a, 'roamer', 'people-view-persons')).status).toBe(201);
    expect(await status(a)).toBe(200);
    expect(await eventually(async () => (await status(b)) === 200)).toBe(true);

    expect((await call(a, 'DELETE', '/api/v1alpha1/rolebindings/roamer-people-view-persons')).status).toBe(200);
    expect(await status(a)).toBe(403);
    expect(await eventually(async () => (await status(b)) === 403)).toBe(true);

    // b remembers the accepted credentials; a password change through a makes it forget them
    const patched = await call(a, 'PATCH', '/api/v1alpha1/users/roamer', { spec: { password: 'second-secret' } }, { 'content-type': 'application/merge-patch+json' });
    expect(patched.status).toBe(200);
    expect(await eventually(async () => (await status(b)) === 401)).toBe(true);
    expect(await status(b, basicAuth('roamer', 'second-secret'))).toBe(403);
  });

  it('a revocation through one gateway ends the streams open on the other', async () => {
    const auth = await createUser(a, 'far-watcher');
    const stays = await createUser(a, 'far-bystander');
    expect((await call(a, 'POST', PERSONS, { metadata: { name: 'eve' }, spec: { name: 'Eve', age: 30 } })).status).toBe(201);
    expect((await bind(a, 'far-watcher', 'people-view-persons')).status).toBe(201);
    expect((await createRole(a, 'far-view', [{ apiGroups: ['people.example.com'], resources: ['persons'], verbs: ['list', 'watch'] }])).status).toBe(201);
    expect((await bind(a, 'far-bystander', 'far-view')).status).toBe(201);
    const status = async (gw: TestGateway, authz: string) => (await call(gw, 'GET', PERSONS, undefined, { authorization: authz })).status;
    expect(await eventually(async () => (await status(b, auth)) === 200 && (await status(b, stays)) === 200)).toBe(true);
    const revoked = openStreams(b, auth);
    const kept = openStreams(b, stays);
    try {
      await revoked.ready(1);
      await kept.ready(1);
      expect((await call(a, 'DELETE', '/api/v1alpha1/rolebindings/far-watcher-people-view-persons')).status).toBe(200);
      await revoked.ended(20_000);
      await expectForbiddenEnd(revoked);
      // a role edit through a: the bystander's streams on b end too
      const patched = await call(a, 'PATCH', '/api/v1alpha1/roles/far-view', { rules: [{ apiGroups: ['people.example.com'], resources: ['persons'], verbs: ['list'] }] }, {
        'content-type': 'application/merge-patch+json',
      });
      expect(patched.status).toBe(200);
      await kept.ended(20_000);
      await expectForbiddenEnd(kept);
    } finally {
      await revoked.close();
      await kept.close();
    }
  });
});
