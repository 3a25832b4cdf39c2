/**
 * Identity (docs/API.md §2, issue 8 "Identity"), on both stores: users with a write-only password,
 * the first administrator, Basic and Bearer authentication, personal access tokens.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MongoClient } from 'mongodb';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { ADMIN, ANONYMOUSLY, basicAuth, call, startTestGateway, STORES, type StoreKind, type TestGateway } from '../helpers/gateway.js';
import { gql } from '../graphql/helpers.js';
import { createUser, watchSocket } from '../helpers/rbac.js';

const USERS = '/api/v1alpha1/users';
const TOKENS = '/apis/uc.api.security.svc.run/v1alpha1/personalaccesstokens';
const PERMISSIONS = '/apis/api.console.svc.run/v1alpha1/users/-/permissions';
const PASSWORD = 'correct-horse-battery-staple';

/** Every stored byte of the gateway's data, as text (to prove a secret is not stored). */
async function storedText(gw: TestGateway, kind: StoreKind): Promise<string> {
  if (kind === 'embedded') {
    const db = new Database(join(gw.dataDir, 'svc.sqlite'), { readonly: true });
    try {
      const tables = db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table'`).all() as { name: string }[];
      return tables.map((t) => JSON.stringify(db.prepare(`SELECT * FROM "${t.name}"`).all())).join('\n');
    } finally {
      db.close();
    }
  }
  const client = await MongoClient.connect(gw.mongodbUrl!);
  try {
    const db = client.db();
    const out: string[] = [];
    for (const c of await db.listCollections().toArray()) out.push(JSON.stringify(await db.collection(c.name).find().toArray()));
    return out.join('\n');
  } finally {
    await client.close();
  }
}

describe.each(STORES)('identity (%s)', (kind) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(kind);
  });
  afterAll(() => gw?.dispose());

  it('stores a user password only as a slow salted hash and never returns it (REST, GraphQL, watch)', async () => {
    const w = watchSocket(gw.url + USERS, `Basic ${Buffer.from(`${ADMIN.username}:${ADMIN.password}`).toString('base64')}`);
    expect(await w.opened).toBe(101);
    const created = await call(gw, 'POST', USERS, { metadata: { name: 'alice' }, spec: { displayName: 'Alice', password: PASSWORD } });
    expect(created.status).toBe(201);
    expect(created.body.spec).toEqual({ displayName: 'Alice' });
    const got = await call(gw, 'GET', `${USERS}/alice`);
    expect(got.body.spec).toEqual({ displayName: 'Alice' });
    const list = await call(gw, 'GET', USERS);
    for (const u of list.body.items) expect(u.spec?.password).toBeUndefined();
    const q = await gql(gw, '{ core_v1alpha1_user(name: "alice") { spec { displayName } } }', undefined, { authorization: basicAuth(ADMIN.username, ADMIN.password) });
    expect(q.body.data.core_v1alpha1_user.spec).toEqual({ displayName: 'Alice' });
    const asField = await gql(gw, '{ core_v1alpha1_user(name: "alice") { spec { password } } }', undefined, { authorization: basicAuth(ADMIN.username, ADMIN.password) });
    expect(asField.body.errors?.[0]?.message).toMatch(/password/);
    await w.until(() => w.events.some((e) => e.object?.metadata?.name === 'alice'));
    expect(JSON.stringify(w.events)).not.toContain('password');
    w.ws.close();

    const text = await storedText(gw, kind);
    expect(text).not.toContain(PASSWORD);
    expect(text).toContain('$scrypt$');
    // the password works, a wrong one gives 401 with a challenge
    expect((await call(gw, 'GET', PERMISSIONS, undefined, { authorization: basicAuth('alice', PASSWORD) })).status).toBe(200);
    const wrong = await call(gw, 'GET', PERMISSIONS, undefined, { authorization: basicAuth('alice', 'nope') });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('www-authenticate')).toMatch(/^Basic/);
  });

  it('keeps the password across writes that do not set it, and changes it when one does', async () => {
    const auth = await createUser(gw, 'bert', 'first-password');
    const got = await call(gw, 'GET', `${USERS}/bert`);
    // PUT of the object as read (no password): still the same password
    const put = await call(gw, 'PUT', `${USERS}/bert`, { ...got.body, spec: { ...got.body.spec, displayName: 'Bert' } });
    expect(put.status).toBe(200);
    expect((await call(gw, 'GET', PERMISSIONS, undefined, { authorization: auth })).status).toBe(200);
    // a JSON patch cannot read the stored hash
    const copy = await call(gw, 'PATCH', `${USERS}/bert`, [{ op: 'copy', from: '/spec/password', path: '/spec/email' }], {
      'content-type': 'application/json-patch+json',
    });
    expect(copy.status).toBeGreaterThanOrEqual(400);
    expect(copy.status).toBeLessThan(500);
    expect(JSON.stringify(copy.body)).not.toContain('scrypt');
    // a merge patch setting a new password: the old one stops working at once
    const patched = await call(gw, 'PATCH', `${USERS}/bert`, { spec: { password: 'second-password' } }, { 'content-type': 'application/merge-patch+json' });
    expect(patched.status).toBe(200);
    expect(patched.body.spec.password).toBeUndefined();
    expect((await call(gw, 'GET', PERMISSIONS, undefined, { authorization: auth })).status).toBe(401);
    expect((await call(gw, 'GET', PERMISSIONS, undefined, { authorization: basicAuth('bert', 'second-password') })).status).toBe(200);
    // disabled and deleted users authenticate nobody
    await call(gw, 'PATCH', `${USERS}/bert`, { spec: { disabled: true } }, { 'content-type': 'application/merge-patch+json' });
    expect((await call(gw, 'GET', PERMISSIONS, undefined, { authorization: basicAuth('bert', 'second-password') })).status).toBe(401);
    await call(gw, 'PATCH', `${USERS}/bert`, { spec: { disabled: false } }, { 'content-type': 'application/merge-patch+json' });
    expect((await call(gw, 'GET', PERMISSIONS, undefined, { authorization: basicAuth('bert', 'second-password') })).status).toBe(200);
    expect((await call(gw, 'DELETE', `${USERS}/bert`)).status).toBe(200);
    expect((await call(gw, 'GET', PERMISSIONS, undefined, { authorization: basicAuth('bert', 'second-password') })).status).toBe(401);
  });

  it('no credentials means anonymous; logged-in users also hold authenticated', async () => {
    const anon = await call(gw, 'GET', PERMISSIONS, undefined, ANONYMOUSLY);
    expect(anon.status).toBe(200);
    expect(anon.body.roles).toContain('anonymous');
    expect(anon.body.roles).not.toContain('authenticated');
    const auth = await createUser(gw, 'carol');
    const mine = await call(gw, 'GET', PERMISSIONS, undefined, { authorization: auth });
    expect(mine.body.roles).toEqual(expect.arrayContaining(['anonymous', 'authenticated']));
    const admin = await call(gw, 'GET', PERMISSIONS);
    expect(admin.body.roles).toContain('super-role');
    const me = await gql(gw, '{ me { username roles uiPermissions } }', undefined, { authorization: auth });
    expect(me.body.data.me).toEqual({ username: 'carol', roles: mine.body.roles, uiPermissions: mine.body.uiPermissions });
    // unsupported schemes and malformed Basic credentials are 401, never anonymous
    expect((await call(gw, 'GET', PERMISSIONS, undefined, { authorization: 'Digest abc' })).status).toBe(401);
    expect((await call(gw, 'GET', PERMISSIONS, undefined, { authorization: 'Basic bm9jb2xvbg==' })).status).toBe(401);
  });

  it('personal access tokens: created for the caller, shown once, listed without text, own only, revocable, expiring', async () => {
    const dave = await createUser(gw, 'dave');
    const erin = await createUser(gw, 'erin');
    expect((await call(gw, 'POST', TOKENS, { spec: { displayName: 'x' } }, ANONYMOUSLY)).status).toBe(401);
    const created = await call(gw, 'POST', TOKENS, { spec: { displayName: 'laptop' } }, { authorization: dave });
    expect(created.status).toBe(201);
    expect(created.body.token).toMatch(/^svcpat_/);
    expect(created.headers.get('location')).toBe(`${TOKENS}/${created.body.metadata.name}`);
    expect(created.body.spec).toEqual({ displayName: 'laptop', username: 'dave' });
    const bearer = { authorization: `Bearer ${created.body.token}` };
    const who = await call(gw, 'GET', PERMISSIONS, undefined, bearer);
    expect(who.status).toBe(200);
    expect((await gql(gw, '{ me { username } }', undefined, bearer)).body.data.me.username).toBe('dave');

    const list = await call(gw, 'GET', TOKENS, undefined, { authorization: dave });
    expect(list.body.items.map((t: any) => t.metadata.name)).toEqual([created.body.metadata.name]);
    expect(JSON.stringify(list.body)).not.toContain(created.body.token.slice(-20));
    expect(JSON.stringify(list.body)).not.toMatch(/digest|secret/i);
    expect((await call(gw, 'GET', TOKENS, undefined, { authorization: erin })).body.items).toEqual([]);
    expect((await call(gw, 'DELETE', `${TOKENS}/${created.body.metadata.name}`, undefined, { authorization: erin })).status).toBe(404);

    expect((await call(gw, 'POST', TOKENS, { spec: { displayName: 'old', expiresAt: '2001-01-01T00:00:00Z' } }, { authorization: dave })).status).toBe(422);
    expect((await call(gw, 'POST', TOKENS, { spec: {} }, { authorization: dave })).status).toBe(422);
    const soon = await call(gw, 'POST', TOKENS, { spec: { displayName: 'short', expiresAt: new Date(Date.now() + 1500).toISOString() } }, { authorization: dave });
    expect(soon.status).toBe(201);
    const shortBearer = { authorization: `Bearer ${soon.body.token}` };
    expect((await call(gw, 'GET', PERMISSIONS, undefined, shortBearer)).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1600));
    expect((await call(gw, 'GET', PERMISSIONS, undefined, shortBearer)).status).toBe(401);

    expect((await call(gw, 'DELETE', `${TOKENS}/${created.body.metadata.name}`, undefined, { authorization: dave })).status).toBe(200);
    expect((await call(gw, 'GET', PERMISSIONS, undefined, bearer)).status).toBe(401);
    expect((await call(gw, 'GET', PERMISSIONS, undefined, { authorization: 'Bearer svcpat_nothing_xyz' })).status).toBe(401);
  });
});

describe('the first administrator', () => {
  it('is generated once, printed by the CLI, persisted, and reset by SVC_ADMIN_PASSWORD', async () => {
    const { startGateway } = await import('../../src/server.js');
    const { mkdtemp, rm } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const dataDir = await mkdtemp(join(tmpdir(), 'svc-admin-'));
    const config = {
      port: 0,
      host: '127.0.0.1',
      dataDir,
      pluginsDir: join(import.meta.dirname, '../../plugins'),
      adminUsername: 'root',
      logLevel: 'silent',
    };
    try {
      let gw = await startGateway(config);
      expect(gw.generatedPassword).toBe(true);
      const generated = gw.adminPassword!;
      expect(generated.length).toBeGreaterThanOrEqual(16);
      const perms = await call(gw, 'GET', PERMISSIONS, undefined, { authorization: basicAuth('root', generated) });
      expect(perms.body.roles).toContain('super-role');
      await gw.close();

      // Not changed yet: shown again (docs/API.md §10), but not generated anew.
      gw = await startGateway(config);
      expect(gw.generatedPassword).toBe(false);
      expect(gw.adminPassword).toBe(generated);
      expect((await call(gw, 'GET', PERMISSIONS, undefined, { authorization: basicAuth('root', generated) })).status).toBe(200);
      await gw.close();

      gw = await startGateway({ ...config, adminPassword: 'from-the-environment' });
      expect(gw.generatedPassword).toBe(false);
      expect((await call(gw, 'GET', PERMISSIONS, undefined, { authorization: basicAuth('root', generated) })).status).toBe(401);
      expect((await call(gw, 'GET', USERS, undefined, { authorization: basicAuth('root', 'from-the-environment') })).status).toBe(200);
      await gw.close();

      // Changed: no longer shown.
      gw = await startGateway(config);
      expect(gw.adminPassword).toBeUndefined();
      await gw.close();
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
