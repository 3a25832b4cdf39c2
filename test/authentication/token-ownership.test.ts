/**
 * A personal access token belongs to the user object, not to its name, and a token minted with a
 * token expires no later than the minting one (docs/API.md §2). On both stores.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestGateway, STORES, type TestGateway } from '../helpers/gateway.js';
import { createUser } from '../helpers/rbac.js';

const TOKENS = '/apis/uc.api.security.svc.run/v1alpha1/personalaccesstokens';
const PERMISSIONS = '/apis/api.console.svc.run/v1alpha1/users/-/permissions';

describe.each(STORES)('token ownership and lifetime (%s)', (kind) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(kind);
  });
  afterAll(() => gw?.dispose());

  const mint = (authorization: string, spec: Record<string, unknown> = {}) =>
    call(gw, 'POST', TOKENS, { spec: { displayName: 't', ...spec } }, { authorization });

  it('a token of a deleted user never authenticates a new user of the same name', async () => {
    const first = await createUser(gw, 'temp');
    const minted = await mint(first);
    expect(minted.status).toBe(201);
    const bearer = { authorization: `Bearer ${minted.body.token}` };
    expect((await call(gw, 'GET', PERMISSIONS, undefined, bearer)).status).toBe(200);
    expect((await call(gw, 'DELETE', '/api/v1alpha1/users/temp')).status).toBe(200);
    expect((await call(gw, 'GET', PERMISSIONS, undefined, bearer)).status).toBe(401);
    const second = await createUser(gw, 'temp', 'another-temp-secret');
    expect((await call(gw, 'GET', PERMISSIONS, undefined, { authorization: second })).status).toBe(200);
    // the old token stays dead for the new "temp", and is not among its tokens
    expect((await call(gw, 'GET', PERMISSIONS, undefined, bearer)).status).toBe(401);
    expect((await call(gw, 'GET', TOKENS, undefined, { authorization: second })).body.items).toEqual([]);
    // the new user's own tokens work
    const own = await mint(second);
    expect((await call(gw, 'GET', PERMISSIONS, undefined, { authorization: `Bearer ${own.body.token}` })).status).toBe(200);
  });

  it('a token minted with a token expires no later than it; with a password, as asked', async () => {
    const basic = await createUser(gw, 'minter');
    const hour = new Date(Date.now() + 3_600_000).toISOString();
    const parent = await mint(basic, { expiresAt: hour });
    expect(parent.status).toBe(201);
    const byToken = `Bearer ${parent.body.token}`;
    // no expiry asked: the minting token's
    const child = await mint(byToken);
    expect(child.status).toBe(201);
    expect(child.body.spec.expiresAt).toBe(hour);
    // a later expiry: capped at the minting token's
    const later = await mint(byToken, { expiresAt: new Date(Date.now() + 7_200_000).toISOString() });
    expect(later.body.spec.expiresAt).toBe(hour);
    // an earlier one is kept
    const soon = new Date(Date.now() + 600_000).toISOString();
    expect((await mint(byToken, { expiresAt: soon })).body.spec.expiresAt).toBe(soon);
    // a grandchild is capped too
    expect((await mint(`Bearer ${child.body.token}`)).body.spec.expiresAt).toBe(hour);
    // with the password: no expiry unless asked
    const forever = await mint(basic);
    expect(forever.status).toBe(201);
    expect(forever.body.spec.expiresAt).toBeUndefined();
    // the recorded owner is never shown
    const listed = await call(gw, 'GET', TOKENS, undefined, { authorization: basic });
    expect(JSON.stringify(listed.body)).not.toMatch(/ownerCreated|secretDigest/);
    expect(Object.keys(child.body).sort()).toEqual(['apiVersion', 'kind', 'metadata', 'spec', 'token']);
  });
});
