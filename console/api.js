// The console's only way to the gateway: fetch with the session's token (never a password),
// `X-Requested-With: XMLHttpRequest` on every call (a 401 then carries no browser challenge),
// and WebSocket watches that carry the token as a sub-protocol.
const TOKEN_KEY = 'svc.console.token';
const TOKEN_NAME_KEY = 'svc.console.tokenName';
const TOKEN_PROTOCOL = 'base64url.bearer.authorization.svc.run.';
export const PERMISSIONS = '/apis/api.console.svc.run/v1alpha1/users/-/permissions';
export const CONSOLE_ROUTES = '/apis/api.console.svc.run/v1alpha1/routes';
export const TOKENS = '/apis/uc.api.security.svc.run/v1alpha1/personalaccesstokens';

export class ApiError extends Error {
  constructor(status, problem) {
    const detail = problem && typeof problem === 'object' ? problem.detail || problem.title : '';
    super(detail || `HTTP ${status}`);
    this.status = status;
    this.problem = problem;
    this.fieldErrors = (problem && Array.isArray(problem.errors) && problem.errors) || [];
  }
}

export const session = {
  get token() {
    return sessionStorage.getItem(TOKEN_KEY);
  },
  get tokenName() {
    return sessionStorage.getItem(TOKEN_NAME_KEY);
  },
  save(token, name) {
    sessionStorage.setItem(TOKEN_KEY, token);
    if (name) sessionStorage.setItem(TOKEN_NAME_KEY, name);
    else sessionStorage.removeItem(TOKEN_NAME_KEY);
  },
  clear() {
    sessionStorage.removeItem(TOKEN_KEY);
    sessionStorage.removeItem(TOKEN_NAME_KEY);
  },
};

let unauthorized = () => {};
/** Called when a call made with the session's token gets 401 (revoked or expired). */
export function onUnauthorized(f) {
  unauthorized = f;
}

export async function request(method, path, { body, contentType, auth } = {}) {
  const headers = { 'X-Requested-With': 'XMLHttpRequest', Accept: 'application/json' };
  const authorization = auth ?? (session.token ? `Bearer ${session.token}` : undefined);
  if (authorization) headers.Authorization = authorization;
  if (body !== undefined) headers['Content-Type'] = contentType ?? 'application/json';
  const res = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'omit',
    cache: 'no-store',
  });
  const text = await res.text();
  let data;
  try {
    data = text ? JSON.parse(text) : undefined;
  } catch {
    data = text;
  }
  if (!res.ok) {
    const err = new ApiError(res.status, data);
    if (res.status === 401 && auth === undefined && session.token) unauthorized(err);
    throw err;
  }
  return data;
}

export const api = {
  get: (path) => request('GET', path),
  post: (path, body) => request('POST', path, { body }),
  put: (path, body) => request('PUT', path, { body }),
  patch: (path, body) => request('PATCH', path, { body, contentType: 'application/merge-patch+json' }),
  del: (path) => request('DELETE', path),
};

/** REST path of a collection: `/api/v1alpha1/<plural>` for the platform kinds, else `/apis/<g>/<v>/<plural>`. */
export const collectionPath = (group, version, plural) => (group ? `/apis/${group}/${version}/${plural}` : `/api/${version}/${plural}`);

const utf8Base64 = (s) => btoa(String.fromCharCode(...new TextEncoder().encode(s)));
const base64url = (s) => utf8Base64(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');

/**
 * Signs in with a personal access token, or with a username and password, which are used once to
 * create a personal access token (12 hours); only that token is kept, in session storage.
 */
export async function signIn({ username, password, token }) {
  if (token) {
    await request('GET', PERMISSIONS, { auth: `Bearer ${token}` });
    session.save(token, '');
    return;
  }
  const expiresAt = new Date(Date.now() + 12 * 3600 * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
  const created = await request('POST', TOKENS, {
    auth: `Basic ${utf8Base64(`${username}:${password}`)}`,
    body: { spec: { displayName: 'Console sign-in', expiresAt } },
  });
  session.save(created.token, created.metadata && created.metadata.name);
}

/** Revokes the token the console created at sign-in (a token pasted by the user is kept). */
export async function signOut() {
  const name = session.tokenName;
  if (name) await request('DELETE', `${TOKENS}/${encodeURIComponent(name)}`).catch(() => undefined);
  session.clear();
}

/**
 * Watches a collection; `onEvent` gets each `{type, object, resourceVersion}`. Reconnects after a
 * drop, resuming after the last event seen. Returns a function that stops the watch.
 */
export function watch(path, params, onEvent) {
  const url = new URL(path, location.href);
  url.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
  for (const [k, v] of Object.entries(params || {})) if (v) url.searchParams.set(k, v);
  let ws;
  let stopped = false;
  let timer;
  let delay = 1000;
  const open = () => {
    const protocols = ['svc.watch'];
    if (session.token) protocols.push(TOKEN_PROTOCOL + base64url(session.token));
    ws = new WebSocket(url.toString(), protocols);
    ws.onmessage = (m) => {
      let ev;
      try {
        ev = JSON.parse(m.data);
      } catch {
        return;
      }
      delay = 1000;
      if (ev.type === 'ERROR') url.searchParams.delete('resourceVersion');
      else if (ev.resourceVersion) url.searchParams.set('resourceVersion', ev.resourceVersion);
      onEvent(ev);
    };
    // Reconnect after a drop, backing off (up to 30 s) while the gateway refuses or is away.
    ws.onclose = () => {
      if (stopped) return;
      timer = setTimeout(open, delay);
      delay = Math.min(delay * 2, 30000);
    };
  };
  open();
  return () => {
    stopped = true;
    clearTimeout(timer);
    if (ws) ws.close();
  };
}
