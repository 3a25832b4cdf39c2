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
 */
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
  const raw = path.split('/').slice(1);
  if (raw.length && raw[raw.length - 1] === '') raw.pop(); // tolerate one trailing slash
  const parts = raw.map(decode);
  if (parts.some((p) => p === undefined || p === '')) return nonResource;
  const segs = parts as string[];
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
