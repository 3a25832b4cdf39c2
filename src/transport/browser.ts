/**
 * What browsers need from the gateway (docs/API.md §9, §10 "Browsers"):
 *
 *  - CORS, off by default: origins listed in SVC_CORS_ORIGINS get `Access-Control-Allow-Origin`
 *    on every response (errors included), and their preflights (OPTIONS carrying
 *    `Access-Control-Request-Method`) are answered 204 before authentication. Preflights from
 *    other origins, and every request when no origin is listed, go on as before.
 *  - `X-Requested-With: XMLHttpRequest`: a 401 answer to such a request carries no
 *    `WWW-Authenticate` challenge, so a browser never shows its own sign-in prompt.
 *  - A browser navigation (`Sec-Fetch-Mode: navigate`, or an Accept that asks for HTML) gets a
 *    401 challenge for Bearer only, never Basic: a browser shows no prompt for it, so it never
 *    caches Basic credentials for the gateway's origin, credentials a page of another origin
 *    could then make it send (docs/API.md §2). The pages themselves are public and never 401.
 *    Other clients (curl, SDKs) get `Basic realm="svc", Bearer realm="svc"`.
 *  - WebSocket credentials: a browser cannot set `Authorization` on a WebSocket, so a watch may
 *    carry a personal access token as a sub-protocol,
 *    `base64url.bearer.authorization.svc.run.<base64url(token)>` (Kubernetes does the same with
 *    `base64url.bearer.authorization.k8s.io.`). When the client offers another protocol too, the
 *    server echoes that one; offered alone, the token protocol is echoed back to the same client,
 *    because a browser (and RFC 6455 clients such as ws) fail a handshake that selects none of the
 *    protocols they offered. It goes nowhere else: never into a log line or another response.
 */
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { Unauthenticated } from '../errors/index.js';

/** The challenge of a 401 to a browser navigation: Bearer only (no browser prompts for it). */
export const NAVIGATION_CHALLENGE = 'Bearer realm="svc"';

export const TOKEN_PROTOCOL_PREFIX = 'base64url.bearer.authorization.svc.run.';

const CORS_METHODS = 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS';
const CORS_HEADERS = 'Authorization, Content-Type, X-Requested-With, If-Match, If-None-Match';
const CORS_EXPOSE = 'Location, ETag, Retry-After, Allow';
const CORS_MAX_AGE = '600';

/** SVC_CORS_ORIGINS → the exact origins allowed (`scheme://host[:port]`, no trailing slash). */
export function parseCorsOrigins(value: string | undefined): string[] {
  if (!value) return [];
  const out: string[] = [];
  for (const raw of value.split(',')) {
    const v = raw.trim();
    if (!v) continue;
    if (v === '*') {
      out.push('*');
      continue;
    }
    let url: URL;
    try {
      url = new URL(v);
    } catch {
      throw new Error(`SVC_CORS_ORIGINS: "${v}" is not an origin (scheme://host[:port])`);
    }
    if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.origin !== v.replace(/\/$/, '')) {
      throw new Error(`SVC_CORS_ORIGINS: "${v}" is not an origin (scheme://host[:port])`);
    }
    out.push(url.origin);
  }
  return out;
}

const requestedWithXhr = (req: IncomingMessage) => String(req.headers['x-requested-with'] ?? '').toLowerCase() === 'xmlhttprequest';
/** A browser loading a document (top level or frame): fetch metadata, or an Accept asking for HTML. */
const browserNavigation = (req: IncomingMessage) =>
  req.headers['sec-fetch-mode'] === 'navigate' || /\btext\/html\b/i.test(String(req.headers.accept ?? ''));

/** Removes `WWW-Authenticate` from whatever form of headers `writeHead` was given. */
function withoutChallenge(headers: unknown): unknown {
  if (Array.isArray(headers)) {
    if (headers.length && Array.isArray(headers[0])) {
      return (headers as [string, unknown][]).filter(([k]) => String(k).toLowerCase() !== 'www-authenticate');
    }
    const flat: unknown[] = [];
    for (let i = 0; i + 1 < headers.length; i += 2) {
      if (String(headers[i]).toLowerCase() !== 'www-authenticate') flat.push(headers[i], headers[i + 1]);
    }
    return flat;
  }
  if (headers && typeof headers === 'object') {
    const copy: OutgoingHttpHeaders = {};
    for (const [k, v] of Object.entries(headers)) if (k.toLowerCase() !== 'www-authenticate') copy[k] = v as OutgoingHttpHeaders[string];
    return copy;
  }
  return headers;
}

/**
 * Makes a 401 answer go without its challenge, or with `challenge` in its place (whoever writes
 * it).
 */
function replaceChallengeOn401(res: ServerResponse, challenge?: string): void {
  const writeHead = res.writeHead;
  res.writeHead = function (this: ServerResponse, status: number, ...rest: unknown[]) {
    if (status === 401) {
      this.removeHeader('www-authenticate');
      rest = rest.map(withoutChallenge);
      if (challenge) this.setHeader('www-authenticate', challenge);
    }
    return (writeHead as (...a: unknown[]) => ServerResponse).call(this, status, ...rest);
  } as typeof res.writeHead;
}

/** Adds `Origin` to a `Vary` value (string or list) unless it is there already. */
function varyWithOrigin(value: unknown): string {
  const parts = (Array.isArray(value) ? value : [value]).flatMap((v) => (v == null ? [] : String(v).split(','))).map((v) => v.trim()).filter(Boolean);
  if (parts.some((p) => p === '*' || p.toLowerCase() === 'origin')) return parts.join(', ');
  return [...parts, 'Origin'].join(', ');
}

/**
 * Keeps `Vary: Origin` on a CORS answer whoever writes its headers: a handler's own `Vary`
 * (Authorization, Accept, …) given to `writeHead` is merged with it, not put in its place.
 */
function keepVaryOrigin(res: ServerResponse): void {
  res.setHeader('vary', 'Origin');
  const writeHead = res.writeHead;
  res.writeHead = function (this: ServerResponse, status: number, ...rest: unknown[]) {
    rest = rest.map((h) => {
      if (!h || typeof h !== 'object' || Array.isArray(h)) return h;
      const key = Object.keys(h).find((k) => k.toLowerCase() === 'vary');
      if (key === undefined) return h;
      const copy: OutgoingHttpHeaders = { ...(h as OutgoingHttpHeaders) };
      delete copy[key];
      this.setHeader('vary', varyWithOrigin([this.getHeader('vary'), (h as OutgoingHttpHeaders)[key]].flat()));
      return copy;
    });
    const current = this.getHeader('vary');
    if (!this.headersSent) this.setHeader('vary', varyWithOrigin(current));
    return (writeHead as (...a: unknown[]) => ServerResponse).call(this, status, ...rest);
  } as typeof res.writeHead;
}

export interface BrowserPolicy {
  /**
   * Applies CORS and the challenge rules to a response before anything else runs. Returns
   * true when the request was a preflight and has been answered.
   */
  apply(req: IncomingMessage, res: ServerResponse): boolean;
}

export function browserPolicy(corsOrigins: readonly string[]): BrowserPolicy {
  const any = corsOrigins.includes('*');
  const allowed = new Set(corsOrigins);
  return {
    apply(req, res) {
      if (requestedWithXhr(req)) replaceChallengeOn401(res);
      else if (browserNavigation(req)) replaceChallengeOn401(res, NAVIGATION_CHALLENGE);
      const origin = req.headers.origin;
      if (!origin || allowed.size === 0 || (!any && !allowed.has(origin))) return false;
      res.setHeader('access-control-allow-origin', any ? '*' : origin);
      keepVaryOrigin(res);
      if (req.method === 'OPTIONS' && req.headers['access-control-request-method']) {
        res.writeHead(204, {
          'access-control-allow-methods': CORS_METHODS,
          'access-control-allow-headers': CORS_HEADERS,
          'access-control-max-age': CORS_MAX_AGE,
          'content-length': '0',
        });
        res.end();
        return true;
      }
      res.setHeader('access-control-expose-headers', CORS_EXPOSE);
      return false;
    },
  };
}

/** The sub-protocols a WebSocket upgrade offers, in order. */
export function offeredProtocols(req: IncomingMessage): string[] {
  const raw = req.headers['sec-websocket-protocol'];
  if (!raw) return [];
  return String(raw)
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
}

const BASE64URL = /^[A-Za-z0-9_-]+$/;

/**
 * The credentials of a WebSocket upgrade: its `Authorization` header, else a bearer token
 * offered as a `base64url.bearer.authorization.svc.run.` sub-protocol, else none. A malformed
 * token protocol is a 401 (never a downgrade to anonymous).
 */
export function upgradeAuthorization(req: IncomingMessage): string | undefined {
  const header = req.headers.authorization;
  if (header !== undefined && header.trim() !== '') return header;
  const offered = offeredProtocols(req).filter((p) => p.startsWith(TOKEN_PROTOCOL_PREFIX));
  if (offered.length === 0) return header;
  if (offered.length > 1) throw new Unauthenticated('more than one token sub-protocol offered');
  const encoded = offered[0]!.slice(TOKEN_PROTOCOL_PREFIX.length);
  const token = BASE64URL.test(encoded) ? Buffer.from(encoded, 'base64url').toString('utf8') : '';
  if (!token || /[\s\x00-\x1f]/.test(token)) throw new Unauthenticated('malformed token sub-protocol');
  return `Bearer ${token}`;
}

/**
 * ws `handleProtocols` for watches: the first offered protocol that is not a token; the token
 * protocol itself when it is the only one offered (else the client fails the handshake); none when
 * none was offered.
 */
export function pickProtocol(protocols: Set<string>): string | false {
  for (const p of protocols) if (!p.startsWith(TOKEN_PROTOCOL_PREFIX)) return p;
  if (protocols.size === 1) return [...protocols][0]!;
  return false;
}
