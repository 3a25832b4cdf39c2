/**
 * The routes of discovery, the OpenAPI documents and the docs page (docs/API.md §8). They are
 * non-resource paths, so like every route they run after authentication and authorization
 * (nonResourceURLs: the built-in `authenticated` role grants them, authorization/builtin-roles.ts; a
 * right on `/apis` or `/api` also opens the discovery paths below it, `discoveryRoot`):
 *
 *   GET /apis                        {groups: [{name, versions, preferredVersion}]}
 *   GET /apis/{g}                    {name, versions, preferredVersion}
 *   GET /apis/{g}/{v}, /api/v1alpha1 {groupVersion, resources: [{name, singularName, kind, verbs}]}
 *   GET /api                         {versions: ["v1alpha1"]}
 *   GET /openapi/v3                  {paths: {"apis/{g}/{v}": {serverRelativeURL}}}
 *   GET /openapi/v3/apis/{g}/{v}     one OpenAPI 3.1 document (?hash= from the index)
 *   GET /openapi/v3/api/v1alpha1
 *   GET /openapi.json                every path in one document
 *
 * (The page /docs and its files are public: apidocs/public.ts.)
 * Each answers only what the caller may read (apidocs/service.ts); a group-version the caller
 * sees nothing of is a 404, whether or not it exists.
 *
 * Caching, as Kubernetes does: a document's index URL carries its content hash; fetched with
 * the current hash it is `immutable` for a year, with another hash it redirects (301) to the
 * current one, without a hash it must be revalidated. Every document has an ETag (the hash), and
 * If-None-Match answers 304. Documents depend on the caller's rights: `private`, Vary: Authorization.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { MethodNotAllowed, NotFound } from '../errors/index.js';
import type { RequestHandler } from '../requestinfo/handler.js';
import type { Caller } from '../identity/caller.js';
import { NO_PARAMS, rejectUnknownParams } from '../requestinfo/query-params.js';
import type { RequestInfo, RequestTarget } from '../requestinfo/requestinfo.js';
import type { ApiDocs, ServedDocument } from './service.js';

/** What a documentation route reads of an authorized request. */
type DocsRoute = RequestHandler<{ caller: Caller; target: RequestTarget }>;

export const PLATFORM_VERSION = 'v1alpha1';

/**
 * For a discovery request below a root (`GET /apis/{g}`, `/apis/{g}/{v}`, `/api/{v}`): the root
 * (`/apis`, `/api`) whose right also grants it. The answer only lists what the caller may read.
 */
export function discoveryRoot(info: RequestInfo): string | undefined {
  if (info.isResourceRequest || info.malformed || (info.verb !== 'get' && info.verb !== 'head')) return undefined;
  if (/^\/apis\/[^/]+(\/[^/]+)?$/.test(info.path)) return '/apis';
  if (/^\/api\/[^/]+$/.test(info.path)) return '/api';
  return undefined;
}
const DOCUMENT_PARAMS: ReadonlySet<string> = new Set(['hash']);

function sendJsonBody(req: IncomingMessage, res: ServerResponse, status: number, text: string, headers: Record<string, string>): void {
  const body = Buffer.from(text, 'utf8');
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(body.length), 'x-content-type-options': 'nosniff', ...headers });
  res.end(req.method === 'HEAD' ? undefined : body);
}

const DISCOVERY_HEADERS = { 'cache-control': 'private, no-cache', vary: 'Authorization' };

function sendDiscovery(req: IncomingMessage, res: ServerResponse, body: unknown): void {
  sendJsonBody(req, res, 200, JSON.stringify(body), DISCOVERY_HEADERS);
}

/** Sends a document with its ETag; 304 on a matching If-None-Match; hash rules as above. */
function sendDocument(req: IncomingMessage, res: ServerResponse, target: RequestTarget, doc: ServedDocument, pathname: string): void {
  const etag = `"${doc.hash}"`;
  const hash = target.searchParams.get('hash');
  if (hash !== null && hash !== doc.hash) {
    res.writeHead(301, { location: `${pathname}?hash=${doc.hash}`, 'cache-control': 'private, no-cache', vary: 'Authorization', 'content-length': '0' });
    res.end();
    return;
  }
  const headers: Record<string, string> = {
    etag,
    vary: 'Authorization',
    'cache-control': hash !== null ? 'private, max-age=31536000, immutable' : 'private, no-cache',
  };
  const match = String(req.headers['if-none-match'] ?? '')
    .split(',')
    .map((s) => s.trim().replace(/^W\//, ''));
  if (match.includes(etag) || match.includes('*')) {
    res.writeHead(304, { ...headers, 'x-content-type-options': 'nosniff' });
    res.end();
    return;
  }
  sendJsonBody(req, res, 200, doc.text, headers);
}

const decode = (s: string) => decodeURIComponent(s);

export function apiDocsRoutes(docs: ApiDocs): (method: string, info: RequestInfo, target: RequestTarget) => DocsRoute | undefined {
  const readOnly =
    (route: DocsRoute, params: ReadonlySet<string> = NO_PARAMS): DocsRoute =>
    async (req, res, rc) => {
      const method = req.method ?? 'GET';
      if (method !== 'GET' && method !== 'HEAD') throw new MethodNotAllowed(`${method} is not allowed on ${rc.target.pathname}`, ['GET', 'HEAD']);
      rejectUnknownParams(rc.target.searchParams, params);
      return route(req, res, rc);
    };

  const groupVersion = (group: string, version: string): DocsRoute =>
    readOnly(async (req, res, rc) => {
      const found = await docs.resources(rc.caller, group, version);
      if (!found) throw new NotFound(`the server could not find the requested resource ${group ? `${group}/` : ''}${version}`);
      sendDiscovery(req, res, found);
    });

  const openapiDocument = (group: string, version: string): DocsRoute =>
    readOnly(async (req, res, rc) => {
      const doc = await docs.document(rc.caller, group, version);
      if (!doc) throw new NotFound(`no OpenAPI document for ${group ? `${group}/` : ''}${version}`);
      sendDocument(req, res, rc.target, doc, rc.target.pathname);
    }, DOCUMENT_PARAMS);

  const routes = {
    groups: readOnly(async (req, res, rc) => sendDiscovery(req, res, { groups: await docs.groups(rc.caller) })),
    core: readOnly(async (req, res) => sendDiscovery(req, res, { versions: [PLATFORM_VERSION] })),
    index: readOnly(async (req, res, rc) => sendDiscovery(req, res, await docs.index(rc.caller))),
    combined: readOnly(async (req, res, rc) => sendDocument(req, res, rc.target, await docs.combined(rc.caller), rc.target.pathname), DOCUMENT_PARAMS),
  };

  return (_method, info, target) => {
    if (info.isResourceRequest || info.malformed) return undefined;
    const segs = target.pathname.slice(1).split('/');
    let parts: string[];
    try {
      parts = segs.map(decode);
    } catch {
      return undefined;
    }
    const [first, ...rest] = parts;
    switch (first) {
      case 'apis':
        if (rest.length === 0) return routes.groups;
        if (rest.length === 1) {
          const name = rest[0]!;
          return readOnly(async (req, res, rc) => {
            const group = (await docs.groups(rc.caller)).find((g) => g.name === name);
            if (!group) throw new NotFound(`the server could not find the requested group ${name}`);
            sendDiscovery(req, res, group);
          });
        }
        if (rest.length === 2) return groupVersion(rest[0]!, rest[1]!);
        return undefined;
      case 'api':
        if (rest.length === 0) return routes.core;
        if (rest.length === 1) return groupVersion('', rest[0]!);
        return undefined;
      case 'openapi':
        if (rest[0] !== 'v3') return undefined;
        if (rest.length === 1) return routes.index;
        if (rest[1] === 'apis' && rest.length === 4) return openapiDocument(rest[2]!, rest[3]!);
        if (rest[1] === 'api' && rest.length === 3) return openapiDocument('', rest[2]!);
        return undefined;
      case 'openapi.json':
        return rest.length === 0 ? routes.combined : undefined;
      default:
        return undefined;
    }
  };
}
