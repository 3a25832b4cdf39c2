/**
 * Parses method + path into request attributes (like k8s endpoints/request/requestinfo.go).
 * Pure: no I/O, no registry lookups.
 *
 * Resource paths:
 *   /api/<version>/<resource>[/<name>[/<subresource>]]            (platform, group "")
 *   /apis/<group>/<version>/<resource>[/<name>[/<subresource>]]   (plugins)
 * Verbs: GET → get (with name) / list (without) / watch (WebSocket upgrade or ?watch=true on a
 * collection); POST → create; PUT → update; PATCH → patch; DELETE → delete (with name) /
 * deletecollection (without). A nameless sub-resource create uses "-" as the name.
 * Anything else is a non-resource request whose verb is the lowercase method.
 *
 * Paths are taken as written (docs/API.md §4): `parseTarget` splits the raw request target without
 * the dot-segment removal and percent-decoding that WHATWG `URL` applies, and a path with an empty
 * segment (trailing or doubled slash), or a `.` or `..` segment (percent-encoded or not), is
 * `malformed`: never a collection, an object or a route. Normalising first turned
 * `DELETE …/persons/%2e` into a deletecollection.
 */

/** The request target as written: the path untouched, the query parsed. */
export interface RequestTarget {
  /** Raw path, percent-encoding kept, dot segments kept. */
  pathname: string;
  searchParams: URLSearchParams;
}

export function parseTarget(raw: string | undefined): RequestTarget {
  let target = raw ?? '/';
  const hash = target.indexOf('#');
  if (hash >= 0) target = target.slice(0, hash);
  const q = target.indexOf('?');
  const pathname = q >= 0 ? target.slice(0, q) : target;
  const search = q >= 0 ? target.slice(q + 1) : '';
  return { pathname: pathname === '' ? '/' : pathname, searchParams: new URLSearchParams(search) };
}

/** Why a raw path can never name a route, or undefined when every segment is well formed. */
export function malformedPath(path: string): string | undefined {
  if (!path.startsWith('/')) return 'the path must start with "/"';
  if (path === '/') return undefined;
  for (const seg of path.slice(1).split('/')) {
    if (seg === '') return 'the path has an empty segment (a doubled or trailing "/")';
    const decoded = decode(seg);
    if (decoded === undefined) return 'the path has a malformed percent-encoding';
    if (decoded === '.' || decoded === '..') return `the path has a "${decoded}" segment`;
  }
  return undefined;
}
export interface RequestInfo {
  isResourceRequest: boolean;
  path: string;
  verb: string;
  apiPrefix: 'api' | 'apis' | '';
  apiGroup: string;
  apiVersion: string;
  resource: string;
  name: string;
  subresource: string;
  /** Set when the path is malformed (see malformedPath): such a request matches no route. */
  malformed?: string;
}

const VERBS: Record<string, string> = {
  POST: 'create',
  PUT: 'update',
  PATCH: 'patch',
};

function decode(seg: string): string | undefined {
  try {
    return decodeURIComponent(seg);
  } catch {
    return undefined;
  }
}

export function parseRequestInfo(method: string, path: string, opts: { watch?: boolean } = {}): RequestInfo {
  const m = method.toUpperCase();
  const nonResource: RequestInfo = {
    isResourceRequest: false,
    path,
    verb: m.toLowerCase(),
    apiPrefix: '',
    apiGroup: '',
    apiVersion: '',
    resource: '',
    name: '',
    subresource: '',
  };
  const malformed = malformedPath(path);
  if (malformed) return { ...nonResource, malformed };
  const segs = path.split('/').slice(1).map((p) => decode(p)!);
  let apiPrefix: 'api' | 'apis';
  let apiGroup: string;
  let rest: string[];
  if (segs[0] === 'api' && segs.length >= 3 && segs.length <= 5) {
    apiPrefix = 'api';
    apiGroup = '';
    rest = segs.slice(1);
  } else if (segs[0] === 'apis' && segs.length >= 4 && segs.length <= 6) {
    apiPrefix = 'apis';
    apiGroup = segs[1]!;
    rest = segs.slice(2);
  } else {
    return nonResource;
  }
  const [apiVersion, resource, name = '', subresource = ''] = rest as [string, string, string?, string?];
  let verb: string;
  switch (m) {
    case 'GET':
    case 'HEAD':
      verb = name ? 'get' : opts.watch ? 'watch' : 'list';
      break;
    case 'DELETE':
      verb = name ? 'delete' : 'deletecollection';
      break;
    default:
      verb = VERBS[m] ?? m.toLowerCase();
  }
  return { isResourceRequest: true, path, verb, apiPrefix, apiGroup, apiVersion, resource, name, subresource };
}
