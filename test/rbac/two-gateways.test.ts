/**
 * Two gateways on one MongoDB database: a grant or revocation (or a password change) through
 * one is honoured by the other after its next poll of the security generation.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuth, call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { bind, createUser } from '../helpers/rbac.js';

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
});
