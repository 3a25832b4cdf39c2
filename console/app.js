// The svc console: sign-in, the menu built from routes' meta.permissions, the route guard, and
// the built-in routes, the plugin routes and a page for every model the user may list
// (models.js). Preact + htm, no build step.
import { html, h, render, useEffect, useState } from './lib.js';
import { api, CONSOLE_ROUTES, collectionPath, onUnauthorized, PERMISSIONS, request, session, signIn, signOut, watch } from './api.js';
import { hasAll, setPermissions } from './perm.js';
import { UsersPage } from './users.js';
import { RolesPage } from './roles.js';
import { PluginsPage } from './plugins.js';
import { ResourcePage } from './resource.js';
import { listableModels, modelRoute } from './models.js';
import { Alert } from './ui.js';

const BASE = '/console';

/** The built-in routes (docs/API.md §9); plugin routes are added from spec.console.routes. */
const BUILTIN_ROUTES = [
  { name: 'users', title: 'Users', meta: { permissions: ['system:users:view'] }, view: UsersPage },
  { name: 'roles', title: 'Roles', meta: { permissions: ['system:roles:view'] }, view: RolesPage },
  { name: 'plugins', title: 'Plugins', meta: { permissions: ['system:plugins:view'] }, view: PluginsPage },
];

const pluginRoute = (r) => ({
  name: r.name,
  title: r.title || r.name,
  plugin: r.plugin,
  meta: { permissions: r.permissions || [] },
  view: ResourcePage,
  config: { ...r, path: collectionPath(r.group, r.version, r.resource) },
});

/**
 * The route a location names: `/console/<name>` (or `/console/#/<name>`); '' is home. A model
 * page's name has three more segments: `/console/model:<group>/<version>/<plural>`.
 */
function routeName(pathname, hash = '') {
  const first = (rest) => decodeURIComponent(rest.split('/').slice(0, rest.startsWith('model:') ? 3 : 1).join('/'));
  const fromPath = pathname.startsWith(`${BASE}/`) ? first(pathname.slice(BASE.length + 1)) : '';
  if (fromPath) return fromPath;
  return hash.startsWith('#/') ? first(hash.slice(2)) : '';
}

/**
 * The route guard (as Halo's console does): a route is entered only when the user holds every
 * permission of its meta.permissions; otherwise the forbidden page is shown instead.
 */
function guard(routes, name) {
  if (!name) return { kind: 'home' };
  const route = routes.find((r) => r.name === name);
  if (!route) return { kind: 'missing', name };
  if (!hasAll(route.meta.permissions)) return { kind: 'forbidden', route };
  return { kind: 'ok', route };
}

function navigate(to) {
  if (location.pathname + location.search !== to) history.pushState(null, '', to);
  window.dispatchEvent(new Event('svc-navigate'));
}

function Link({ to, children, ...rest }) {
  return html`<a href=${to} ...${rest} onClick=${(e) => {
    if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(to);
  }}>${children}</a>`;
}

function SignIn({ message, onSignedIn }) {
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [token, setToken] = useState('');
  const [error, setError] = useState(message || '');
  const [busy, setBusy] = useState(false);
  async function submit(e) {
    e.preventDefault();
    setError('');
    if (!token && (!username || !password)) return setError('Enter a username and password, or a personal access token.');
    setBusy(true);
    try {
      await signIn(token ? { token: token.trim() } : { username: username.trim(), password });
      setPassword('');
      setToken('');
      onSignedIn();
    } catch (x) {
      setPassword('');
      setError(
        x.status === 401
          ? token
            ? 'That token is not valid (wrong, revoked or expired).'
            : 'Wrong username or password.'
          : x.status === 429
            ? 'Too many failed sign-ins. Wait a minute and try again.'
            : `Sign-in failed: ${x.message}`,
      );
    } finally {
      setBusy(false);
    }
  }
  return html`<main class="signin">
    <form class="panel signin-card" novalidate onSubmit=${submit} data-page="sign-in" aria-labelledby="signin-title">
      <div class="brand"><img src="/console/assets/logo.svg" alt="" width="36" height="36" /><span>svc console</span></div>
      <h1 id="signin-title">Sign in</h1>
      ${error ? html`<div class="alert" role="alert">${error}</div>` : null}
      <div class="field"><label for="username">Username</label>
        <input id="username" name="username" autocomplete="username" value=${username} onInput=${(e) => setUsername(e.currentTarget.value)} /></div>
      <div class="field"><label for="password">Password</label>
        <input id="password" name="password" type="password" autocomplete="current-password" value=${password} onInput=${(e) => setPassword(e.currentTarget.value)} /></div>
      <p class="or"><span>or</span></p>
      <div class="field"><label for="token">Personal access token</label>
        <input id="token" name="token" type="password" autocomplete="off" value=${token} onInput=${(e) => setToken(e.currentTarget.value)} /></div>
      <button type="submit" class="primary wide" data-action="sign-in" disabled=${busy}>${busy ? 'Signing in…' : 'Sign in'}</button>
      <p class="muted small">The console keeps only a personal access token, in this tab's session storage.</p>
    </form>
  </main>`;
}

function Home({ routes, me }) {
  const mine = routes.filter((r) => !r.model && hasAll(r.meta.permissions));
  const models = routes.filter((r) => r.model);
  return html`<section class="page" data-page="home">
    <h1>Welcome${me ? `, ${me}` : ''}</h1>
    ${mine.length
      ? html`<div class="cards">${mine.map((r) => html`<${Link} class="card" to=${`${BASE}/${r.name}`}><strong>${r.title}</strong>
          <span class="muted">${r.plugin ? `Plugin ${r.plugin}` : 'System'}</span></${Link}>`)}</div>`
      : models.length
        ? null
        : html`<p class="muted">Your roles give you no console pages. Ask an administrator for access.</p>`}
    ${models.length
      ? html`<h2>Models</h2>
          <div class="cards">${models.map((r) => html`<${Link} class="card" to=${`${BASE}/${r.name}`}><strong>${r.title}</strong>
            <span class="muted">${r.subtitle}</span></${Link}>`)}</div>`
      : null}
  </section>`;
}

function Forbidden({ route }) {
  return html`<section class="page" data-page="forbidden">
    <h1>Access denied</h1>
    <div class="alert" role="alert">You do not have permission to open ${route.title}.</div>
    <p><${Link} to=${`${BASE}/`}>Back to the start page</${Link}></p>
  </section>`;
}

function Missing({ name }) {
  return html`<section class="page" data-page="not-found">
    <h1>Not found</h1>
    <div class="alert" role="alert">There is no console page "${name}".</div>
  </section>`;
}

function Shell({ state, reload, onSignOut }) {
  const { routes, me } = state;
  const [path, setPath] = useState(location.pathname + location.hash);
  useEffect(() => {
    const sync = () => setPath(location.pathname + location.hash);
    window.addEventListener('popstate', sync);
    window.addEventListener('hashchange', sync);
    window.addEventListener('svc-navigate', sync);
    return () => {
      window.removeEventListener('popstate', sync);
      window.removeEventListener('hashchange', sync);
      window.removeEventListener('svc-navigate', sync);
    };
  }, []);
  const current = routeName(location.pathname, location.hash);
  const target = guard(routes, current);
  const menu = routes.filter((r) => !r.model && hasAll(r.meta.permissions));
  const models = routes.filter((r) => r.model);
  const entry = (r) => html`<li key=${r.name}><${Link} to=${`${BASE}/${r.name}`} data-route=${r.name}
    aria-current=${current === r.name ? 'page' : undefined}>${r.title}${r.subtitle ? html` <small>${r.subtitle}</small>` : null}</${Link}></li>`;
  let content;
  if (target.kind === 'home') content = html`<${Home} routes=${routes} me=${me} />`;
  else if (target.kind === 'missing') content = html`<${Missing} name=${target.name} />`;
  else if (target.kind === 'forbidden') content = html`<${Forbidden} route=${target.route} />`;
  else content = h(target.route.view, { key: target.route.name, route: target.route.config, onPluginsChanged: reload });
  return html`<div class="shell">
    <aside class="sidebar">
      <${Link} class="brand" to=${`${BASE}/`}><img src="/console/assets/logo.svg" alt="" width="28" height="28" /><span>svc console</span></${Link}>
      <nav aria-label="Main menu">
        <ul>${menu.map(entry)}</ul>
        ${models.length ? html`<h2 class="nav-head" id="models-menu">Models</h2><ul aria-labelledby="models-menu">${models.map(entry)}</ul>` : null}
      </nav>
      <div class="whoami">
        <span class="muted small">Signed in as</span>
        <strong data-field="username">${me || '…'}</strong>
        <button data-action="sign-out" onClick=${onSignOut}>Sign out</button>
      </div>
    </aside>
    <main class="content">${content}</main>
  </div>`;
}

function App() {
  const [state, setState] = useState({ phase: session.token ? 'loading' : 'sign-in' });
  const load = async () => {
    try {
      const [perms, consoleRoutes, me, models] = await Promise.all([
        api.get(PERMISSIONS),
        api.get(CONSOLE_ROUTES).catch(() => ({ items: [] })),
        request('POST', '/graphql', { body: { query: '{ me { username } }' } }).catch(() => undefined),
        listableModels().catch(() => []),
      ]);
      setPermissions(perms.uiPermissions);
      const routes = [
        ...BUILTIN_ROUTES,
        ...consoleRoutes.items.filter((r) => !BUILTIN_ROUTES.some((b) => b.name === r.name)).map(pluginRoute),
        ...models.map(modelRoute),
      ];
      setState({ phase: 'ready', routes, me: me && me.data && me.data.me ? me.data.me.username : '' });
    } catch (x) {
      if (x.status === 401) {
        session.clear();
        setState({ phase: 'sign-in', message: 'Your session has ended. Please sign in again.' });
      } else {
        setState({ phase: 'error', message: `The gateway could not be reached: ${x.message}` });
      }
    }
  };
  useEffect(() => {
    onUnauthorized(() => {
      session.clear();
      setPermissions([]);
      setState({ phase: 'sign-in', message: 'Your session has ended. Please sign in again.' });
    });
    if (session.token) load();
  }, []);
  const out = async () => {
    await signOut();
    setPermissions([]);
    setState({ phase: 'sign-in' });
    navigate(`${BASE}/`);
  };
  if (state.phase === 'sign-in') return html`<${SignIn} message=${state.message} onSignedIn=${() => { setState({ phase: 'loading' }); load(); }} />`;
  if (state.phase === 'loading') return html`<p class="loading muted">Loading…</p>`;
  if (state.phase === 'error') return html`<main class="signin"><${Alert} message=${state.message} /></main>`;
  return html`<${Shell} state=${state} reload=${load} onSignOut=${out} />`;
}

// For plugin views: the same html/h, the permission check and the API client, without imports.
// <svc-permission permissions='[...]'> is registered globally by perm.js.
window.svc = Object.freeze({ html, h, hasPermissions: hasAll, api, watch });

render(html`<${App} />`, document.getElementById('app'));
