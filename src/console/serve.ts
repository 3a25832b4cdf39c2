/**
 * The administration console at /console/ (docs/API.md §9): static files from `console/` in the
 * repository and Preact + htm as ES modules from node_modules, all public (the sign-in page loads
 * before anyone is signed in); every API call the console makes is authenticated like any other.
 * No build step: the files are served as they are.
 *
 *   /console                 → 301 /console/
 *   /console/assets/<file>   → console/<file> (js, css, svg)
 *   /console/vendor/<file>   → preact, preact/hooks, htm (bare `preact` imports rewritten)
 *   /console/<anything else> → console/index.html (the console routes on the client)
 *
 * Every answer carries a strict Content-Security-Policy (no inline script or style) and
 * `X-Content-Type-Options: nosniff`.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BadRequest, MethodNotAllowed, NotFound } from '../errors/index.js';
import { sendProblem } from '../errors/http.js';
import { NO_PARAMS, rejectUnknownParams } from '../requestinfo/query-params.js';
import { malformedPath } from '../requestinfo/requestinfo.js';

export const CONSOLE_PREFIX = '/console';

const APP_DIR = join(dirname(fileURLToPath(import.meta.url)), '../../console');
const require = createRequire(import.meta.url);

export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const SECURITY_HEADERS = {
  'content-security-policy': CONSOLE_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

const TYPES: Record<string, string> = {
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  svg: 'image/svg+xml',
  html: 'text/html; charset=utf-8',
};

interface Asset {
  body: Buffer;
  type: string;
}

/** `from"preact"` → `from"./preact.js"`: the browser has no import map (it would be an inline script). */
const rewritePreact = (text: string) => text.replace(/from\s*(["'])preact\1/g, 'from"./preact.js"');

function vendorFiles(): Map<string, () => string> {
  const file = (spec: string) => require.resolve(spec);
  const preactDir = dirname(file('preact/package.json'));
  return new Map([
    ['preact.js', () => readFileSync(join(preactDir, 'dist/preact.module.js'), 'utf8')],
    ['hooks.js', () => rewritePreact(readFileSync(join(preactDir, 'hooks/dist/hooks.module.js'), 'utf8'))],
    ['htm.js', () => readFileSync(join(dirname(file('htm')), 'htm.module.js'), 'utf8')],
  ]);
}

const ASSET_NAME = /^[a-z0-9][a-z0-9-]*\.(js|css|svg)$/;

export interface ConsoleServer {
  /** True when the path belongs to the console (then `serve` answers it). */
  owns(pathname: string): boolean;
  serve(req: IncomingMessage, res: ServerResponse, pathname: string): void;
}

export function consoleServer(): ConsoleServer {
  const cache = new Map<string, Asset>();
  const vendor = vendorFiles();

  const load = (key: string, read: () => string | Buffer, type: string): Asset => {
    let a = cache.get(key);
    if (!a) {
      const raw = read();
      a = { body: typeof raw === 'string' ? Buffer.from(raw) : raw, type };
      cache.set(key, a);
    }
    return a;
  };

  function asset(pathname: string): Asset | undefined {
    const rest = pathname.slice(CONSOLE_PREFIX.length + 1);
    if (rest.startsWith('vendor/')) {
      const name = rest.slice('vendor/'.length);
      const read = vendor.get(name);
      return read ? load(`vendor/${name}`, read, TYPES.js!) : undefined;
    }
    if (rest.startsWith('assets/')) {
      const name = rest.slice('assets/'.length);
      if (!ASSET_NAME.test(name)) return undefined;
      try {
        return load(`assets/${name}`, () => readFileSync(join(APP_DIR, name)), TYPES[name.split('.').pop()!]!);
      } catch {
        return undefined;
      }
    }
    return load('index.html', () => readFileSync(join(APP_DIR, 'index.html')), TYPES.html!);
  }

  return {
    owns: (pathname) => pathname === CONSOLE_PREFIX || pathname.startsWith(`${CONSOLE_PREFIX}/`),
    serve(req, res, pathname) {
      for (const [k, v] of Object.entries(SECURITY_HEADERS)) res.setHeader(k, v);
      const method = req.method ?? 'GET';
      if (method !== 'GET' && method !== 'HEAD') {
        res.setHeader('allow', 'GET, HEAD');
        return sendProblem(res, new MethodNotAllowed(`${method} is not allowed on the console's files`, ['GET', 'HEAD']), pathname);
      }
      // The console reads no query parameters: an unknown one gets 400 naming it, as on every route (docs/API.md §4).
      try {
        rejectUnknownParams(new URLSearchParams((req.url ?? '').split('?').slice(1).join('?')), NO_PARAMS);
      } catch (e) {
        return sendProblem(res, e, pathname);
      }
      // A path with an empty, `.` or `..` segment (encoded or not) names no page (docs/API.md §4); `/console/` is the one trailing slash.
      const malformed = pathname === `${CONSOLE_PREFIX}/` ? undefined : malformedPath(pathname);
      if (malformed) return sendProblem(res, new BadRequest(malformed), pathname);
      if (pathname === CONSOLE_PREFIX) {
        res.writeHead(301, { location: `${CONSOLE_PREFIX}/`, 'content-length': '0' });
        return void res.end();
      }
      const isFile = /^\/console\/(assets|vendor)\//.test(pathname);
      const found = asset(pathname);
      if (!found) return sendProblem(res, new NotFound(`no console file at ${pathname}`), pathname);
      res.writeHead(200, {
        'content-type': found.type,
        'content-length': String(found.body.length),
        // The page itself is revalidated; files may be cached briefly (no fingerprints in names).
        'cache-control': isFile ? 'public, max-age=300' : 'no-cache',
      });
      res.end(method === 'HEAD' ? undefined : found.body);
    },
  };
}
