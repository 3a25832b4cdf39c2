/**
 * The HTML pages work offline (docs/API.md §8): the landing page `/`, the API reference `/docs`
 * and GraphiQL (`GET /graphql` with Accept: text/html). Each page is fetched, its script and
 * stylesheet URLs parsed out, and every one must be same-origin and answer 200 with the right
 * content type; GraphiQL's Monaco workers too. Every page sends a strict Content-Security-Policy
 * (scripts from the gateway only, inline ones only by hash) and nosniff. The store plays no part:
 * one store.
 *
 * When playwright-core is installed and /usr/bin/chromium exists, a real headless Chromium
 * also renders /docs and GraphiQL with every request outside the gateway blocked.
 */
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contentSecurityPolicy, inlineScriptHashes, page } from '../../src/apidocs/pages.js';
import { ADMIN, adminAuth, startTestGateway, type TestGateway } from '../helpers/gateway.js';

const TYPES: Record<string, RegExp> = {
  js: /^text\/javascript\b/,
  css: /^text\/css\b/,
  png: /^image\/png$/,
  ico: /^image\/png$/,
};

function assetUrls(html: string): string[] {
  const urls: string[] = [];
  for (const m of html.matchAll(/<script\b[^>]*\bsrc="([^"]+)"/gi)) urls.push(m[1]!);
  for (const m of html.matchAll(/<link\b[^>]*\bhref="([^"]+)"/gi)) urls.push(m[1]!);
  return urls;
}

function directives(csp: string): Record<string, string[]> {
  return Object.fromEntries(
    csp
      .split(';')
      .map((d) => d.trim().split(/\s+/))
      .filter((d) => d[0])
      .map(([name, ...values]) => [name!, values]),
  );
}

describe('HTML pages and their assets', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway('embedded');
  });
  afterAll(async () => {
    await gw?.dispose();
  });

  async function get(path: string, headers: Record<string, string> = {}) {
    const res = await fetch(gw.url + path, { headers: { authorization: adminAuth, ...headers } });
    return { res, text: await res.text() };
  }

  /** Fetches a page and checks its headers and every asset it loads. */
  async function checkPage(path: string, headers: Record<string, string> = {}): Promise<string> {
    const { res, text } = await get(path, { accept: 'text/html', ...headers });
    expect(res.status, path).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    const csp = directives(res.headers.get('content-security-policy') ?? '');
    expect(csp['default-src']).toEqual(["'none'"]);
    expect(csp['script-src']![0]).toBe("'self'");
    expect(csp['script-src']).not.toContain("'unsafe-inline'");
    expect(csp['script-src']).not.toContain("'unsafe-eval'");
    expect(csp['object-src']).toEqual(["'none'"]);
    expect(csp['frame-ancestors']).toEqual(["'none'"]);
    // any inline script is allowed by its hash, and only by it
    for (const h of inlineScriptHashes(text)) expect(csp['script-src']).toContain(`'sha256-${h}'`);
    expect(text).not.toMatch(/\b(src|href)="(https?:)?\/\//i);
    const assets = assetUrls(text);
    expect(assets.length, path).toBeGreaterThan(0);
    for (const url of assets) {
      expect(url, url).toMatch(/^\/[^/]/);
      const asset = await get(url, headers);
      expect(asset.res.status, url).toBe(200);
      expect(asset.res.headers.get('content-type'), url).toMatch(TYPES[url.split('.').pop()!]!);
      expect(asset.res.headers.get('x-content-type-options'), url).toBe('nosniff');
      expect(asset.text.length, url).toBeGreaterThan(0);
    }
    return text;
  }

  it('GET / links the console, the docs, GraphiQL and health, for everyone', async () => {
    const html = await checkPage('/', { authorization: '' });
    for (const href of ['/console/', '/docs', '/graphql', '/healthz', '/livez', '/readyz', '/openapi.json']) {
      expect(html).toContain(`href="${href}"`);
    }
    expect((await fetch(`${gw.url}/`, { method: 'POST' })).status).toBe(405);
    expect((await fetch(`${gw.url}/?x=1`)).status).toBe(400);
    expect((await fetch(`${gw.url}/favicon.ico`)).headers.get('content-type')).toBe('image/png');
  });

  it('/docs: Swagger UI over the documents, every asset from the gateway', async () => {
    const html = await checkPage('/docs');
    expect(html).toContain('/docs/assets/swagger-ui-bundle.js');
    const init = await get('/docs/assets/docs.js');
    expect(init.text).toContain("fetch('/openapi/v3'");
    expect(init.text).toContain('validatorUrl: null'); // no call to an online validator
    // The page and its files hold no data and are public (so no page ever sends a challenge);
    // the documents it loads keep their rule (docs/API.md §8).
    for (const path of ['/docs', '/docs/assets/docs.js', '/docs/assets/session.js']) expect((await fetch(gw.url + path)).status).toBe(200);
    for (const path of ['/openapi/v3', '/openapi.json']) expect((await fetch(gw.url + path)).status).toBe(401);
    expect((await get('/docs/assets/nothing.js')).res.status).toBe(404);
  });

  it('assets are cached by ETag and sent compressed', async () => {
    const first = await get('/docs/assets/swagger-ui-bundle.js', { 'accept-encoding': 'gzip' });
    expect(first.res.headers.get('etag')).toBeTruthy();
    expect(first.res.headers.get('content-encoding')).toBe('gzip'); // fetch inflates it
    expect(first.text).toContain('SwaggerUIBundle');
    const again = await get('/docs/assets/swagger-ui-bundle.js', { 'if-none-match': first.res.headers.get('etag')! });
    expect(again.res.status).toBe(304);
  });

  it('GraphiQL at GET /graphql (Accept: text/html) loads from the gateway, Monaco workers too', async () => {
    const html = await checkPage('/graphql', { authorization: '' });
    expect(html).toContain('/graphql/assets/yoga-graphiql.umd.js');
    expect(html).not.toContain('unpkg');
    const setup = await get('/graphql/assets/graphiql-setup.js', { authorization: '' });
    const workers = Object.values<string>(JSON.parse(/var workers = (\{[^}]*\})/.exec(setup.text)![1]!));
    expect(workers).toHaveLength(3);
    for (const w of workers) {
      const r = await get(`/graphql/assets/monacoeditorwork/${w}`, { authorization: '' });
      expect(r.res.status, w).toBe(200);
      expect(r.res.headers.get('content-type')).toMatch(TYPES.js!);
    }
    // GraphQL itself is unchanged
    const q = await fetch(`${gw.url}/graphql?query=${encodeURIComponent('{ me { username } }')}`, { headers: { accept: 'application/json' } });
    expect(q.status).toBe(200);
    expect(await q.json()).toEqual({ data: { me: { username: 'anonymous' } } });
  });

  it('computes the hash of any inline script into the policy', () => {
    const p = page('<html><script>alert(1)</script><script src="/x.js"></script></html>');
    // sha256("alert(1)") in base64
    expect(inlineScriptHashes(p.html)).toEqual(['bhHHL3z2vDgxUt0W3dWQOrprscmda2Y5pLsLg4GF+pI=']);
    expect(p.headers['content-security-policy']).toBe(contentSecurityPolicy(['bhHHL3z2vDgxUt0W3dWQOrprscmda2Y5pLsLg4GF+pI=']));
    expect(p.headers['content-security-policy']).toContain("script-src 'self' 'sha256-bhHHL3z2vDgxUt0W3dWQOrprscmda2Y5pLsLg4GF+pI='");
  });

  // Like the console tests: Debian's Chromium is required (.ci/run installs it), never skipped.
  const chromium = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
  it('a real Chromium renders /docs and GraphiQL offline', { timeout: 90_000 }, async () => {
    if (!existsSync(chromium)) throw new Error(`Chromium not found at ${chromium}: apt-get install -y chromium (or set CHROMIUM_PATH)`);
    const pw = await import('playwright-core');
    const browser = await pw.chromium.launch({ executablePath: chromium, args: ['--no-sandbox'] });
    try {
      const context = await browser.newContext();
      const outside: string[] = [];
      const errors: string[] = [];
      await context.route('**/*', (route: any) => {
        if (route.request().url().startsWith(gw.url)) return route.continue();
        outside.push(route.request().url());
        return route.abort();
      });
      const tab = await context.newPage();
      tab.on('console', (m: any) => m.type() === 'error' && errors.push(m.text()));
      tab.on('pageerror', (e: Error) => errors.push(e.message));
      // Signed in through the console: /docs and GraphiQL use its token (docs/API.md §9).
      await tab.goto(`${gw.url}/console/`);
      await tab.fill('input[name=username]', ADMIN.username);
      await tab.fill('input[name=password]', ADMIN.password);
      await tab.click('button[type=submit]');
      await tab.locator('a[data-route="users"]').first().waitFor({ timeout: 30_000 });
      await tab.goto(`${gw.url}/docs`);
      await tab.getByText('/apis/people.example.com/v1alpha1/persons/{name}').first().waitFor({ timeout: 30_000 });
      await tab.goto(`${gw.url}/graphql`);
      await tab.locator('.graphiql-container').first().waitFor({ timeout: 30_000 });
      expect(outside).toEqual([]);
      expect(errors.filter((e) => /Content Security Policy|Refused/i.test(e))).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});
