/**
 * Ambient credentials are never enough for a write (issue 35 finding 3; docs/API.md §2).
 *
 * A browser holding Basic credentials for the gateway's origin (every request the browser sends
 * to the gateway gets them added, as Chromium's auth cache does once a user typed them at a
 * challenge: the old /docs sent one) loads pages of ANOTHER origin (a second server on
 * another loopback port) that post to the gateway without a CORS preflight: self-submitting
 * HTML forms (urlencoded, multipart and the text/plain JSON trick) with a GraphQL mutation, and a
 * `fetch` of an untyped Blob (`mode: 'no-cors'`, `credentials: 'include'`) to POST a RoleBinding to
 * the super role. After each, the API shows that nothing changed. On the old code every one of
 * them wrote.
 *
 * Also over plain HTTP: 415 for every body without a JSON (or patch) Content-Type, GraphQL over
 * GET never mutates, and no page answers with a Basic challenge (a browser navigation gets a
 * Bearer-only challenge, an XMLHttpRequest none, other clients Basic and Bearer). Both stores.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, adminAuth, ANONYMOUSLY, call, STORES, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { createUser } from '../helpers/rbac.js';
import { CHROMIUM } from '../console/browser.js';

const USERS = '/api/v1alpha1/users';
const BINDINGS = '/api/v1alpha1/rolebindings';
const PERSONS = '/apis/people.example.com/v1alpha1/persons';
const TOKENS = '/apis/uc.api.security.svc.run/v1alpha1/personalaccesstokens';
const UC_POSTS = '/apis/uc.api.content.svc.run/v1alpha1/posts';
const MUTATION = 'mutation { core_v1alpha1_patchUser(name: "mallory", patch: {spec: {displayName: "pwned"}}) { metadata { name } } }';
const BINDING = {
  apiVersion: 'v1alpha1',
  kind: 'RoleBinding',
  metadata: { name: 'mallory-super' },
  roleRef: { apiGroup: '', kind: 'Role', name: 'super-role' },
  subjects: [{ apiGroup: '', kind: 'User', name: 'mallory' }],
};

const escape = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

/** The attacker's pages, by path; each ends by setting document.title to "done" (forms: by navigating away). */
function attackerPages(gateway: string): Record<string, string> {
  const form = (enctype: string, fields: string) =>
    `<!doctype html><form method="POST" action="${gateway}/graphql" enctype="${enctype}">${fields}</form><script>document.forms[0].submit()</script>`;
  return {
    '/form-urlencoded': form('application/x-www-form-urlencoded', `<input name="query" value="${escape(MUTATION)}">`),
    '/form-multipart': form('multipart/form-data', `<input name="query" value="${escape(MUTATION)}">`),
    // text/plain sends `name=value`: with this name and value the body is valid JSON.
    '/form-text': form('text/plain', `<input name="${escape(`{"query":${JSON.stringify(MUTATION)},"x":"`)}" value="${escape('"}')}">`),
    '/blob': `<!doctype html><script>
      fetch(${JSON.stringify(`${gateway}${BINDINGS}`)}, { method: 'POST', body: new Blob([${JSON.stringify(JSON.stringify(BINDING))}]), mode: 'no-cors', credentials: 'include' })
        .finally(function () { document.title = 'done'; });
    </script>`,
    '/blob-graphql': `<!doctype html><script>
      fetch(${JSON.stringify(`${gateway}/graphql`)}, { method: 'POST', body: new Blob([${JSON.stringify(JSON.stringify({ query: MUTATION }))}]), mode: 'no-cors', credentials: 'include' })
        .finally(function () { document.title = 'done'; });
    </script>`,
  };
}

describe.each(STORES)('ambient credentials never write (%s)', (kind) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(kind);
    await createUser(gw, 'mallory');
  });
  afterAll(async () => {
    await gw?.dispose();
  });

  /** Nothing the attacks try has happened. */
  async function unchanged(): Promise<void> {
    expect((await call(gw, 'GET', `${USERS}/mallory`)).body.spec.displayName).toBe('mallory');
    expect((await call(gw, 'GET', `${BINDINGS}/mallory-super`)).status).toBe(404);
    expect((await call(gw, 'GET', `${PERSONS}/csrf`)).status).toBe(404);
  }

  it('a body without a JSON Content-Type is 415 on every write route, and changes nothing', async () => {
    const person = JSON.stringify({ metadata: { name: 'csrf' }, spec: { name: 'C' } });
    const send = (method: string, path: string, body: string | Blob, type?: string) =>
      fetch(gw.url + path, { method, body, headers: { authorization: adminAuth, ...(type ? { 'content-type': type } : {}) } });
    // No Content-Type at all (an untyped Blob), and the three types a form can send.
    for (const type of [undefined, 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
      const body = type ? person : new Blob([person]);
      for (const [method, path] of [
        ['POST', PERSONS],
        ['POST', BINDINGS],
        ['POST', TOKENS],
        ['PUT', `${USERS}/mallory`],
        ['PUT', `${USERS}/mallory/status`],
        ['POST', UC_POSTS], // a plugin's custom route
      ] as const) {
        const r = await send(method, path, method === 'POST' && path === BINDINGS ? JSON.stringify(BINDING) : body, type);
        expect(r.status, `${method} ${path} ${type ?? '(none)'}`).toBe(415);
        expect(r.headers.get('content-type')).toContain('application/problem+json');
      }
      const g = await send('POST', '/graphql', type ? JSON.stringify({ query: MUTATION }) : new Blob([JSON.stringify({ query: MUTATION })]), type);
      expect(g.status, `POST /graphql ${type ?? '(none)'}`).toBe(415);
      expect((await g.json()).errors[0].message).toMatch(/application\/json/);
    }
    // A urlencoded GraphQL form, as a browser sends it.
    const form = await send('POST', '/graphql', new URLSearchParams({ query: MUTATION }).toString(), 'application/x-www-form-urlencoded');
    expect(form.status).toBe(415);
    // PATCH takes only the patch types.
    expect((await send('PATCH', `${USERS}/mallory`, '{"spec":{"displayName":"pwned"}}', 'text/plain')).status).toBe(415);
    // Mutations never run over GET.
    const get = await fetch(`${gw.url}/graphql?query=${encodeURIComponent(MUTATION)}`, { headers: { authorization: adminAuth, accept: 'application/json' } });
    expect(get.status).toBe(405);
    await unchanged();
    // The same writes with application/json work (the rule refuses the type, not the write).
    const ok = await call(gw, 'POST', '/graphql', { query: 'mutation { core_v1alpha1_patchUser(name: "mallory", patch: {spec: {email: "m@example.com"}}) { spec { email } } }' });
    expect(ok.body.data.core_v1alpha1_patchUser.spec.email).toBe('m@example.com');
  });

  it('no page answers with a Basic challenge; API 401s challenge Basic only to non-browsers', async () => {
    const navigate = { accept: 'text/html,application/xhtml+xml,*/*;q=0.8', 'sec-fetch-mode': 'navigate' };
    for (const path of ['/', '/console/', '/docs', '/graphql']) {
      // anonymous, and with wrong credentials
      for (const authorization of [undefined, `Basic ${Buffer.from('admin:wrong').toString('base64')}`]) {
        const r = await fetch(gw.url + path, { headers: { ...navigate, ...(authorization ? { authorization } : {}) } });
        expect(r.status, path).toBe(200);
        expect(r.headers.get('www-authenticate'), path).toBeNull();
      }
    }
    // A browser that navigates to an API path gets no Basic challenge (so no prompt, nothing cached).
    for (const path of ['/apis', '/openapi.json', '/openapi/v3', USERS, '/docs/', '/graphql/assets/nothing.js']) {
      const r = await fetch(gw.url + path, { headers: navigate });
      expect(r.status, path).toBe(401);
      expect(r.headers.get('www-authenticate'), path).toBe('Bearer realm="svc"');
      const html = await fetch(gw.url + path, { headers: { accept: 'text/html' } });
      expect(html.headers.get('www-authenticate'), path).toBe('Bearer realm="svc"');
    }
    // GraphQL refusals (anonymous introspection, wrong credentials) from a page's script: no challenge.
    const xhr = await fetch(`${gw.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-requested-with': 'XMLHttpRequest', authorization: `Basic ${Buffer.from('admin:wrong').toString('base64')}` },
      body: JSON.stringify({ query: '{ me { username } }' }),
    });
    expect(xhr.status).toBe(401);
    expect(xhr.headers.get('www-authenticate')).toBeNull();
    // Other clients (curl, SDKs) still learn both schemes.
    const plain = await call(gw, 'GET', '/apis', undefined, ANONYMOUSLY);
    expect(plain.status).toBe(401);
    expect(plain.headers.get('www-authenticate')).toBe('Basic realm="svc", Bearer realm="svc"');
  });

  it('Chromium with cached Basic credentials: pages of another origin cannot write', { timeout: 120_000 }, async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`Chromium not found at ${CHROMIUM}: apt-get install -y chromium (or set CHROMIUM_PATH)`);
    const pages = attackerPages(gw.url);
    const attacker: Server = createServer((req, res) => {
      const html = pages[req.url ?? ''];
      res.writeHead(html ? 200 : 404, { 'content-type': 'text/html; charset=utf-8' });
      res.end(html ?? 'not found');
    });
    await new Promise<void>((r) => attacker.listen(0, '127.0.0.1', () => r()));
    const evil = `http://127.0.0.1:${(attacker.address() as AddressInfo).port}`;
    expect(new URL(evil).origin).not.toBe(new URL(gw.url).origin);
    const pw = await import('playwright-core');
    const browser = await pw.chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    try {
      const context = await browser.newContext();
      const basic = `Basic ${Buffer.from(`${ADMIN.username}:${ADMIN.password}`).toString('base64')}`;
      // The auth cache: whatever page started it, a request to the gateway carries the credentials.
      await context.route(`${gw.url}/**`, (route) => route.continue({ headers: { ...route.request().headers(), authorization: basic } }));
      const sent: { url: string; method: string; type?: string; status: number }[] = [];
      context.on('response', async (res) => {
        const req = res.request();
        if (req.url().startsWith(gw.url) && req.method() === 'POST') {
          sent.push({ url: req.url(), method: req.method(), type: await req.headerValue('content-type').catch(() => null) ?? undefined, status: res.status() });
        }
      });
      const tab = await context.newPage();
      // The browser does hold working credentials for the gateway.
      const me = await tab.goto(`${gw.url}/api/v1alpha1/users/mallory`);
      expect(me?.status()).toBe(200);
      for (const path of Object.keys(pages)) {
        const before = sent.length;
        await tab.goto(evil + path);
        if (path.startsWith('/form')) await tab.waitForURL(`${gw.url}/graphql`);
        else await tab.waitForFunction(() => document.title === 'done');
        // The POST reached the gateway, with the cached credentials, and was refused.
        await expect.poll(() => sent.length, { timeout: 10_000 }).toBeGreaterThan(before);
        expect(sent[sent.length - 1]!.status, `${path}: ${JSON.stringify(sent[sent.length - 1])}`).toBe(415);
        await unchanged();
      }
    } finally {
      await browser.close();
      await new Promise((r) => attacker.close(r));
    }
  });
});
