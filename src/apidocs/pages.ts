/**
 * The HTML pages (landing page `/`, API reference `/docs`, GraphiQL at `/graphql`) and the
 * static assets they load, every one served by the gateway itself from installed packages
 * (swagger-ui-dist, @graphql-yoga/render-graphiql): the pages work with no internet.
 *
 * Every page is sent with a strict Content-Security-Policy: scripts only from the gateway
 * (`script-src 'self'`, plus the sha256 of any inline script, computed when the page is built)
 * and `X-Content-Type-Options: nosniff`. Styles may be inline: Swagger UI and Monaco set them.
 *
 * Signed in without Basic (docs/API.md §9): /docs and GraphiQL send the console's token
 * (`sessionStorage`, this origin and tab only) as `Authorization: Bearer` on their own requests,
 * with `X-Requested-With` (so a 401 never makes the browser prompt) and no ambient credentials
 * (`credentials: 'omit'`). Without a token they show a small sign-in form (SESSION_JS) that
 * creates one the way the console does; nothing else is stored.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { gzip } from 'node:zlib';
import { promisify } from 'node:util';

const gzipAsync = promisify(gzip);
const require = createRequire(import.meta.url);
const SWAGGER_DIR = dirname(require.resolve('swagger-ui-dist/package.json'));
/**
 * GraphiQL's bundle, stylesheet and Monaco workers, as the strings @graphql-yoga/render-graphiql
 * ships (it inlines them into one page; we serve them as files, so no inline script is needed).
 * Loaded on first use: about 9 MB.
 */
interface GraphiQLFiles {
  js: string;
  css: string;
  editorWorkerService: string;
  jsonWorker: string;
  graphqlWorker: string;
}
// A static asset cache, process-wide on purpose: the files of an installed package, read once.
let graphiqlFiles: GraphiQLFiles | undefined;
function graphiql(): GraphiQLFiles {
  graphiqlFiles ??= require(join(dirname(require.resolve('@graphql-yoga/render-graphiql')), 'graphiql.js')) as GraphiQLFiles;
  return graphiqlFiles;
}

export const DOCS_ASSETS = '/docs/assets';
export const GRAPHIQL_ASSETS = '/graphql/assets';

/** The Content-Security-Policy of a page whose inline scripts have these sha256 hashes. */
export function contentSecurityPolicy(scriptHashes: string[] = []): string {
  const scripts = ["'self'", ...scriptHashes.map((h) => `'sha256-${h}'`)].join(' ');
  return [
    "default-src 'none'",
    `script-src ${scripts}`,
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "worker-src 'self'",
    "manifest-src 'self'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
    "object-src 'none'",
  ].join('; ');
}

/** sha256 (base64) of every inline `<script>` of `html`. */
export function inlineScriptHashes(html: string): string[] {
  const out: string[] = [];
  for (const m of html.matchAll(/<script(\s[^>]*)?>([\s\S]*?)<\/script>/gi)) {
    if (/\ssrc\s*=/i.test(m[1] ?? '')) continue;
    if (m[2]) out.push(createHash('sha256').update(m[2], 'utf8').digest('base64'));
  }
  return out;
}

export interface Page {
  html: string;
  headers: Record<string, string>;
}

/** A page with its headers: CSP over its own inline scripts, nosniff, no caching. */
export function page(html: string): Page {
  return {
    html,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': contentSecurityPolicy(inlineScriptHashes(html)),
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      'cache-control': 'no-cache',
    },
  };
}


const STYLE = `body{font:16px/1.5 system-ui,sans-serif;max-width:44rem;margin:3rem auto;padding:0 1rem;color:#1f2328}
h1{font-size:1.6rem}ul{padding-left:1.2rem}li{margin:.4rem 0}a{color:#0969da}code{background:#f6f8fa;padding:.1rem .3rem;border-radius:4px}`;

export const LANDING_PAGE = page(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>svc gateway</title><link rel="icon" type="image/png" href="/favicon.ico"><style>${STYLE}</style></head>
<body><main>
<h1>svc gateway</h1>
<p>REST, GraphQL and watch API over plugin-declared models.</p>
<ul>
<li><a href="/console/">Console</a>: users, roles, plugins and plugin pages</li>
<li><a href="/docs">API reference</a>: interactive, over <a href="/openapi/v3"><code>/openapi/v3</code></a> and <a href="/openapi.json"><code>/openapi.json</code></a></li>
<li><a href="/graphql">GraphiQL</a>: the GraphQL API at <code>/graphql</code></li>
<li>Discovery: <a href="/apis"><code>/apis</code></a>, <a href="/api/v1alpha1"><code>/api/v1alpha1</code></a></li>
<li>Health: <a href="/healthz"><code>/healthz</code></a>, <a href="/livez"><code>/livez</code></a>, <a href="/readyz"><code>/readyz</code></a></li>
</ul>
</main></body></html>
`);

export const DOCS_PAGE = page(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>API reference · svc gateway</title>
<link rel="icon" type="image/png" href="${DOCS_ASSETS}/favicon-32x32.png">
<link rel="stylesheet" href="${DOCS_ASSETS}/swagger-ui.css">
</head>
<body><div id="svc-session"></div><div id="swagger-ui"></div>
<script src="${DOCS_ASSETS}/session.js"></script>
<script src="${DOCS_ASSETS}/swagger-ui-bundle.js"></script>
<script src="${DOCS_ASSETS}/swagger-ui-standalone-preset.js"></script>
<script src="${DOCS_ASSETS}/docs.js"></script>
</body></html>
`);

export const GRAPHIQL_PAGE = page(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>GraphiQL · svc gateway</title>
<link rel="stylesheet" href="${GRAPHIQL_ASSETS}/graphiql.css">
</head>
<body id="body" class="no-focus-outline"><div id="root">Loading GraphiQL…</div>
<div id="svc-session" style="position:fixed;top:0;right:0;z-index:100;max-width:28rem"></div>
<script src="${GRAPHIQL_ASSETS}/session.js"></script>
<script src="${GRAPHIQL_ASSETS}/graphiql-setup.js"></script>
<script src="${GRAPHIQL_ASSETS}/yoga-graphiql.umd.js"></script>
<script src="${GRAPHIQL_ASSETS}/graphiql-start.js"></script>
</body></html>
`);

// /graphql answers HTML or GraphQL responses by the Accept header.
GRAPHIQL_PAGE.headers.vary = 'Accept';

/**
 * The session of /docs and GraphiQL: the console's token from sessionStorage (same keys as
 * console/api.js), or a small sign-in form that creates one as the console does (username and
 * password used once for a 12-hour personal access token; or a token pasted) and reloads.
 */
const SESSION_JS = `'use strict';
(function () {
  var TOKEN_KEY = 'svc.console.token', NAME_KEY = 'svc.console.tokenName';
  var TOKENS = '/apis/uc.api.security.svc.run/v1alpha1/personalaccesstokens';
  function token() { try { return sessionStorage.getItem(TOKEN_KEY); } catch (e) { return null; } }
  function headers(extra) {
    var h = { 'X-Requested-With': 'XMLHttpRequest' };
    var t = token();
    if (t) h.Authorization = 'Bearer ' + t;
    for (var k in extra || {}) h[k] = extra[k];
    return h;
  }
  function b64(s) { return btoa(String.fromCharCode.apply(null, new TextEncoder().encode(s))); }
  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    (children || []).forEach(function (c) { e.append(c); });
    return e;
  }
  function input(name, type, label) {
    return el('label', { style: 'margin-right:.5rem' }, [label + ' ', el('input', { name: name, type: type, autocomplete: type === 'password' ? 'current-password' : 'username' })]);
  }
  /** Shows the sign-in form (with why, when given) in #svc-session. */
  function showSignIn(why) {
    var box = document.getElementById('svc-session');
    if (!box) return;
    box.textContent = '';
    var alert = el('p', { role: 'alert', style: 'color:#b00020;margin:.3rem 0' }, [why || '']);
    var form = el('form', { 'data-svc': 'sign-in' }, [
      el('strong', {}, ['Sign in ']),
      input('username', 'text', 'Username'),
      input('password', 'password', 'Password'),
      'or ', input('token', 'password', 'Token'),
      el('button', { type: 'submit' }, ['Sign in']),
      alert,
    ]);
    box.setAttribute('style', (box.getAttribute('style') || '') + ';background:#fff8e1;border:1px solid #e0c060;padding:.5rem;font:14px system-ui,sans-serif');
    form.addEventListener('submit', function (ev) {
      ev.preventDefault();
      var f = form.elements;
      var pasted = f.token.value.trim();
      var done = function (t, name) {
        sessionStorage.setItem(TOKEN_KEY, t);
        if (name) sessionStorage.setItem(NAME_KEY, name); else sessionStorage.removeItem(NAME_KEY);
        location.reload();
      };
      var fail = function (r) { alert.textContent = r.status === 401 ? 'Wrong credentials.' : 'Sign-in failed (HTTP ' + r.status + ').'; };
      if (pasted) {
        fetch('/apis', { credentials: 'omit', headers: { 'X-Requested-With': 'XMLHttpRequest', Authorization: 'Bearer ' + pasted } })
          .then(function (r) { if (r.ok || r.status === 403) done(pasted, ''); else fail(r); });
        return;
      }
      var expiresAt = new Date(Date.now() + 12 * 3600 * 1000).toISOString().replace(/\\.\\d{3}Z$/, 'Z');
      fetch(TOKENS, {
        method: 'POST',
        credentials: 'omit',
        headers: { 'X-Requested-With': 'XMLHttpRequest', 'Content-Type': 'application/json', Authorization: 'Basic ' + b64(f.username.value + ':' + f.password.value) },
        body: JSON.stringify({ spec: { displayName: 'API reference sign-in', expiresAt: expiresAt } })
      }).then(function (r) {
        if (!r.ok) return fail(r);
        return r.json().then(function (created) { done(created.token, created.metadata && created.metadata.name); });
      });
    });
    box.append(form);
  }
  window.svcSession = { token: token, headers: headers, showSignIn: showSignIn };
})();
`;

/** Swagger UI over the /openapi/v3 index: one entry per group-version, plus the combined document. */
const DOCS_JS = `'use strict';
(function () {
  var session = window.svcSession;
  function start(urls) {
    window.ui = SwaggerUIBundle({
      urls: urls,
      'urls.primaryName': urls[0] && urls[0].name,
      dom_id: '#swagger-ui',
      deepLinking: true,
      validatorUrl: null,
      // The session's token on every request (documents and "Try it out"), no ambient credentials.
      requestInterceptor: function (req) {
        var h = session.headers();
        for (var k in h) if (!(k in req.headers)) req.headers[k] = h[k];
        req.credentials = 'omit';
        return req;
      },
      presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
      plugins: [SwaggerUIBundle.plugins.DownloadUrl],
      layout: 'StandaloneLayout'
    });
  }
  fetch('/openapi/v3', { credentials: 'omit', headers: session.headers({ accept: 'application/json' }) })
    .then(function (r) {
      if (r.status === 401) session.showSignIn(session.token() ? 'Your session has expired; sign in again.' : 'Sign in to read the API reference.');
      return r.ok ? r.json() : { paths: {} };
    })
    .catch(function () { return { paths: {} }; })
    .then(function (index) {
      var urls = [{ name: 'All APIs (/openapi.json)', url: '/openapi.json' }];
      Object.keys(index.paths || {}).sort().forEach(function (key) {
        urls.push({ name: key, url: index.paths[key].serverRelativeURL });
      });
      start(urls);
    });
})();
`;

const MONACO_WORKERS: Record<string, string> = {
  editorWorkerService: 'editor.worker.bundle.js',
  json: 'json.worker.bundle.js',
  graphql: 'graphql.worker.bundle.js',
};

/** Runs before the GraphiQL bundle: Monaco's workers load from the gateway too. */
const GRAPHIQL_SETUP_JS = `'use strict';
(function () {
  var workers = ${JSON.stringify(MONACO_WORKERS)};
  self.MonacoEnvironment = {
    globalAPI: false,
    getWorkerUrl: function (_moduleId, label) {
      return '${GRAPHIQL_ASSETS}/monacoeditorwork/' + (workers[label] || workers.editorWorkerService);
    }
  };
})();
`;

/** GraphiQL with the session's token on every request (queries, introspection, subscriptions). */
const GRAPHIQL_START_JS = `'use strict';
(function () {
  var session = window.svcSession;
  if (!session.token()) session.showSignIn('Signed out: sign in, or query as anonymous.');
  YogaGraphiQL.renderYogaGraphiQL(document.getElementById('root'), {
    endpoint: '/graphql',
    title: 'svc gateway',
    subscriptionsProtocol: 'WS',
    credentials: 'omit',
    additionalHeaders: session.headers(),
    defaultQuery: '{\\n  me {\\n    username\\n    roles\\n  }\\n}\\n'
  });
})();
`;

interface Asset {
  type: string;
  /** A file to read (once), the text itself, or a function giving it. */
  file?: string;
  text?: string | (() => string);
}

const JS = 'text/javascript; charset=utf-8';
const CSS = 'text/css; charset=utf-8';

export const DOCS_ASSET_FILES: Record<string, Asset> = {
  'swagger-ui.css': { type: CSS, file: join(SWAGGER_DIR, 'swagger-ui.css') },
  'swagger-ui-bundle.js': { type: JS, file: join(SWAGGER_DIR, 'swagger-ui-bundle.js') },
  'swagger-ui-standalone-preset.js': { type: JS, file: join(SWAGGER_DIR, 'swagger-ui-standalone-preset.js') },
  'favicon-32x32.png': { type: 'image/png', file: join(SWAGGER_DIR, 'favicon-32x32.png') },
  'docs.js': { type: JS, text: DOCS_JS },
  'session.js': { type: JS, text: SESSION_JS },
};

export const GRAPHIQL_ASSET_FILES: Record<string, Asset> = {
  'graphiql.css': { type: CSS, text: () => graphiql().css },
  'yoga-graphiql.umd.js': { type: JS, text: () => graphiql().js },
  'session.js': { type: JS, text: SESSION_JS },
  'graphiql-setup.js': { type: JS, text: GRAPHIQL_SETUP_JS },
  'graphiql-start.js': { type: JS, text: GRAPHIQL_START_JS },
  'monacoeditorwork/editor.worker.bundle.js': { type: JS, text: () => graphiql().editorWorkerService },
  'monacoeditorwork/json.worker.bundle.js': { type: JS, text: () => graphiql().jsonWorker },
  'monacoeditorwork/graphql.worker.bundle.js': { type: JS, text: () => graphiql().graphqlWorker },
};

interface Loaded {
  body: Buffer;
  etag: string;
  gzipped?: Promise<Buffer>;
}

/** Serves assets from memory: read once, ETag (304), gzip when the client accepts it, nosniff. */
export class AssetServer {
  private loaded = new Map<string, Promise<Loaded>>();

  constructor(private readonly assets: Record<string, Asset>) {}

  has(name: string): boolean {
    return Object.hasOwn(this.assets, name);
  }

  private load(name: string): Promise<Loaded> {
    let p = this.loaded.get(name);
    if (!p) {
      const a = this.assets[name]!;
      const text = () => Buffer.from(typeof a.text === 'function' ? a.text() : (a.text ?? ''), 'utf8');
      p = (a.file ? readFile(a.file) : Promise.resolve().then(text)).then((body) => ({
        body,
        etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 32)}"`,
      }));
      p.catch(() => this.loaded.delete(name));
      this.loaded.set(name, p);
    }
    return p;
  }

  async serve(name: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const asset = this.assets[name]!;
    const loaded = await this.load(name);
    const headers: Record<string, string> = {
      'content-type': asset.type,
      etag: loaded.etag,
      'cache-control': 'no-cache',
      'x-content-type-options': 'nosniff',
      vary: 'Accept-Encoding',
    };
    if (req.headers['if-none-match'] === loaded.etag) {
      res.writeHead(304, headers);
      res.end();
      return;
    }
    let body = loaded.body;
    const accepts = /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
    if (accepts && body.length > 1024 && !asset.type.startsWith('image/')) {
      loaded.gzipped ??= gzipAsync(body);
      body = await loaded.gzipped;
      headers['content-encoding'] = 'gzip';
    }
    headers['content-length'] = String(body.length);
    res.writeHead(200, headers);
    res.end(req.method === 'HEAD' ? undefined : body);
  }
}

/** Sends a page (HEAD: headers only). */
export function sendPage(p: Page, req: IncomingMessage, res: ServerResponse): void {
  const body = Buffer.from(p.html, 'utf8');
  res.writeHead(200, { ...p.headers, 'content-length': String(body.length) });
  res.end(req.method === 'HEAD' ? undefined : body);
}


