/**
 * The browser-facing API (docs/API.md §9, §10 "Browsers"): CORS from SVC_CORS_ORIGINS, a token
 * carried as a WebSocket sub-protocol (REST watch and graphql-ws), 401 without a challenge for
 * XMLHttpRequest callers, and the console's built-in role templates and UI permissions.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { ANONYMOUSLY, basicAuth, call, STORES, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { parseCorsOrigins, TOKEN_PROTOCOL_PREFIX } from '../../src/transport/browser.js';

const PERSONS = '/apis/people.example.com/v1alpha1/persons';
const PERMISSIONS = '/apis/api.console.svc.run/v1alpha1/users/-/permissions';
const TOKENS = '/apis/uc.api.security.svc.run/v1alpha1/personalaccesstokens';
const ORIGIN = 'http://console.example.test:5173';
const SYSTEM_UI = ['users', 'roles', 'plugins'].flatMap((m) => [`system:${m}:view`, `system:${m}:manage`]);

const tokenProtocol = (token: string) => `${TOKEN_PROTOCOL_PREFIX}${Buffer.from(token).toString('base64url')}`;

/** Opens a WebSocket with the given sub-protocols; resolves with the socket or the refusal status. */
function connect(url: string, protocols: string[]): Promise<{ ws?: WebSocket; status?: number; messages: any[] }> {
  const messages: any[] = [];
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, protocols);
    ws.on('message', (d) => messages.push(JSON.parse(String(d))));
    ws.on('open', () => resolve({ ws, messages }));
    ws.on('unexpected-response', (_req, res) => {
      resolve({ status: res.statusCode, messages });
      res.resume();
    });
    ws.on('error', reject);
  });
}

async function until<T>(f: () => T | undefined, ms = 5000): Promise<T> {
  for (let t = 0; t < ms; t += 20) {
    const v = f();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error('timed out');
}

describe('SVC_CORS_ORIGINS parsing', () => {
  it('takes comma-separated origins and refuses anything else', () => {
    expect(parseCorsOrigins(undefined)).toEqual([]);
    expect(parseCorsOrigins(' http://a.test:8080 , https://b.test ')).toEqual(['http://a.test:8080', 'https://b.test']);
    expect(() => parseCorsOrigins('http://a.test/path')).toThrow(/not an origin/);
    expect(() => parseCorsOrigins('a.test')).toThrow(/not an origin/);
  });
});

describe.each(STORES)('browser-facing API (%s)', (store) => {
  let gw: TestGateway;
  let plain: TestGateway;
  let token: string;
  beforeAll(async () => {
    [gw, plain] = await Promise.all([startTestGateway(store, { config: { corsOrigins: [ORIGIN] } }), startTestGateway('embedded')]);
    await call(gw, 'POST', PERSONS, { metadata: { name: 'ada' }, spec: { name: 'Ada' } });
    const created = await call(gw, 'POST', TOKENS, { spec: { displayName: 'browser test' } });
    expect(created.status).toBe(201);
    token = created.body.token;
  });
  afterAll(async () => {
    await Promise.all([gw?.dispose(), plain?.dispose()]);
  });

  describe('CORS', () => {
    it('is off by default: no CORS headers, and a preflight is not answered', async () => {
      const res = await call(plain, 'GET', PERSONS, undefined, { origin: ORIGIN });
      expect(res.status).toBe(200);
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
      const pre = await call(plain, 'OPTIONS', PERSONS, undefined, { ...ANONYMOUSLY, origin: ORIGIN, 'access-control-request-method': 'GET' });
      expect(pre.status).not.toBe(204);
      expect(pre.headers.get('access-control-allow-origin')).toBeNull();
    });

    it('answers a listed origin\'s preflight with 204 before authentication', async () => {
      const pre = await call(gw, 'OPTIONS', `${PERSONS}/ada`, undefined, {
        ...ANONYMOUSLY,
        origin: ORIGIN,
        'access-control-request-method': 'PATCH',
        'access-control-request-headers': 'authorization, content-type, x-requested-with',
      });
      expect(pre.status).toBe(204);
      expect(pre.headers.get('access-control-allow-origin')).toBe(ORIGIN);
      expect(pre.headers.get('access-control-allow-methods')).toContain('PATCH');
      const allowed = pre.headers.get('access-control-allow-headers')!.toLowerCase();
      for (const h of ['authorization', 'content-type', 'x-requested-with']) expect(allowed).toContain(h);
    });

    it('puts the origin on successes and errors alike, exposing Location and ETag', async () => {
      const ok = await call(gw, 'POST', PERSONS, { metadata: { name: 'grace' }, spec: { name: 'Grace' } }, { origin: ORIGIN });
      expect(ok.status).toBe(201);
      expect(ok.headers.get('access-control-allow-origin')).toBe(ORIGIN);
      expect(ok.headers.get('access-control-expose-headers')).toMatch(/Location/);
      expect(ok.headers.get('access-control-expose-headers')).toMatch(/ETag/);
      const denied = await call(gw, 'GET', PERSONS, undefined, { ...ANONYMOUSLY, origin: ORIGIN });
      expect(denied.status).toBe(401);
      expect(denied.headers.get('content-type')).toBe('application/problem+json');
      expect(denied.headers.get('access-control-allow-origin')).toBe(ORIGIN);
      const missing = await call(gw, 'GET', `${PERSONS}/nobody`, undefined, { origin: ORIGIN });
      expect(missing.status).toBe(404);
      expect(missing.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    });

    it('gives an unlisted origin nothing', async () => {
      const res = await call(gw, 'GET', PERSONS, undefined, { origin: 'http://evil.test' });
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
      const pre = await call(gw, 'OPTIONS', PERSONS, undefined, { ...ANONYMOUSLY, origin: 'http://evil.test', 'access-control-request-method': 'GET' });
      expect(pre.status).not.toBe(204);
      expect(pre.headers.get('access-control-allow-origin')).toBeNull();
    });
  });

  describe('401 for XMLHttpRequest', () => {
    it('has no WWW-Authenticate challenge when the request says X-Requested-With: XMLHttpRequest', async () => {
      const wrong = basicAuth('admin', 'not-the-password');
      const plainRes = await call(gw, 'GET', PERSONS, undefined, { authorization: wrong });
      expect(plainRes.status).toBe(401);
      expect(plainRes.headers.get('www-authenticate')).toMatch(/Basic/);
      const xhr = await call(gw, 'GET', PERSONS, undefined, { authorization: wrong, 'x-requested-with': 'XMLHttpRequest' });
      expect(xhr.status).toBe(401);
      expect(xhr.headers.get('www-authenticate')).toBeNull();
      expect(xhr.body).toMatchObject({ status: 401 });
      const anon = await call(gw, 'GET', PERSONS, undefined, { ...ANONYMOUSLY, 'x-requested-with': 'XMLHttpRequest' });
      expect(anon.status).toBe(401);
      expect(anon.headers.get('www-authenticate')).toBeNull();
    });

    it('holds for /graphql too', async () => {
      const q = JSON.stringify({ query: '{ me { username } }' });
      const h = { authorization: 'Bearer not-a-token-at-all', 'content-type': 'application/json', accept: 'application/graphql-response+json' };
      const challenged = await call(gw, 'POST', '/graphql', q, h);
      expect(challenged.status).toBe(401);
      expect(challenged.headers.get('www-authenticate')).not.toBeNull();
      const xhr = await call(gw, 'POST', '/graphql', q, { ...h, 'x-requested-with': 'XMLHttpRequest' });
      expect(xhr.status).toBe(401);
      expect(xhr.headers.get('www-authenticate')).toBeNull();
    });
  });

  describe('token in Sec-WebSocket-Protocol', () => {
    const wsUrl = (path: string) => `${gw.url.replace(/^http/, 'ws')}${path}`;

    it('authenticates a REST watch and echoes the other offered protocol, never the token', async () => {
      const c = await connect(wsUrl(`${PERSONS}?watch=true`), ['svc.watch', tokenProtocol(token)]);
      expect(c.status).toBeUndefined();
      expect(c.ws!.protocol).toBe('svc.watch');
      await until(() => (c.messages.some((m) => m.object?.metadata?.name === 'ada') ? true : undefined));
      c.ws!.close();
    });

    it('a token protocol offered alone is echoed to that client (else its handshake fails) and the watch works', async () => {
      // As a browser does it: new WebSocket(url, [tokenProtocol]).
      const c = await connect(wsUrl(`${PERSONS}?watch=true`), [tokenProtocol(token)]);
      expect(c.status).toBeUndefined();
      expect(c.ws!.protocol).toBe(tokenProtocol(token));
      await until(() => (c.messages.some((m) => m.object?.metadata?.name === 'ada') ? true : undefined));
      c.ws!.close();
    });

    it('refuses a wrong or malformed token with 401, and without one the watch is anonymous (401 here)', async () => {
      expect((await connect(wsUrl(PERSONS), ['svc.watch', tokenProtocol('wrong-token-value')])).status).toBe(401);
      expect((await connect(wsUrl(PERSONS), ['svc.watch', `${TOKEN_PROTOCOL_PREFIX}not+base64url`])).status).toBe(401);
      expect((await connect(wsUrl(PERSONS), ['svc.watch'])).status).toBe(401);
    });

    it('authenticates graphql-ws and echoes graphql-transport-ws', async () => {
      const c = await connect(wsUrl('/graphql'), ['graphql-transport-ws', tokenProtocol(token)]);
      expect(c.ws!.protocol).toBe('graphql-transport-ws');
      c.ws!.send(JSON.stringify({ type: 'connection_init' }));
      await until(() => (c.messages.some((m) => m.type === 'connection_ack') ? true : undefined));
      c.ws!.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: '{ me { username } }' } }));
      const next = await until(() => c.messages.find((m) => m.type === 'next'));
      expect(next.payload.data.me.username).toBe('admin');
      c.ws!.close();
      expect((await connect(wsUrl('/graphql'), ['graphql-transport-ws', tokenProtocol('wrong-token-value')])).status).toBe(401);
    });
  });

  describe('built-in role templates and UI permissions', () => {
    it('the super administrator holds every UI permission', async () => {
      const me = await call(gw, 'GET', PERMISSIONS);
      expect(me.status).toBe(200);
      expect(me.body.uiPermissions).toEqual(expect.arrayContaining(['*', ...SYSTEM_UI, 'system:posts:manage', 'plugin:people:view']));
    });

    it('templates carry the system UI permissions, grouped by module, and grant what their route needs', async () => {
      const roles = await call(gw, 'GET', '/api/v1alpha1/roles?labelSelector=svc.run/role-template=true');
      const byName = new Map<string, any>(roles.body.items.map((r: any) => [r.metadata.name, r]));
      const ui = (name: string) => JSON.parse(byName.get(name)?.metadata.annotations['rbac.authorization.svc.run/ui-permissions'] ?? '[]');
      for (const m of ['users', 'roles', 'plugins']) {
        expect(ui(`system-${m}-view`)).toEqual([`system:${m}:view`]);
        expect(ui(`system-${m}-manage`)).toEqual([`system:${m}:manage`]);
        expect(byName.get(`system-${m}-manage`).metadata.annotations['rbac.authorization.svc.run/dependencies']).toBe(`["system-${m}-view"]`);
        expect(byName.get(`system-${m}-view`).metadata.annotations['rbac.authorization.svc.run/module']).toBeTruthy();
      }

      await call(gw, 'POST', '/api/v1alpha1/users', { metadata: { name: 'viewer' }, spec: { displayName: 'V', email: 'v@example.test', password: 'viewer-password-1' } });
      const bind = await call(gw, 'POST', '/api/v1alpha1/rolebindings', {
        metadata: { name: 'viewer-users-view' },
        roleRef: { apiGroup: '', kind: 'Role', name: 'system-users-view' },
        subjects: [{ apiGroup: '', kind: 'User', name: 'viewer' }],
      });
      expect(bind.status).toBe(201);
      const auth = { authorization: basicAuth('viewer', 'viewer-password-1') };
      const perms = await call(gw, 'GET', PERMISSIONS, undefined, auth);
      expect(perms.body.uiPermissions).toContain('system:users:view');
      expect(perms.body.uiPermissions).not.toContain('system:users:manage');
      expect(perms.body.uiPermissions).not.toContain('*');
      expect((await call(gw, 'GET', '/api/v1alpha1/users', undefined, auth)).status).toBe(200);
      expect((await call(gw, 'POST', '/api/v1alpha1/users', { metadata: { name: 'x' }, spec: {} }, auth)).status).toBe(403);
      expect((await call(gw, 'GET', '/apis/plugin.svc.run/v1alpha1/plugins', undefined, auth)).status).toBe(403);
    });
  });
});
