// The roles route: role templates grouped by their module annotation and shown by display name,
// with their dependencies; other roles above them. Hidden roles, anonymous and authenticated are
// never listed.
import { html, useEffect, useState } from './lib.js';
import { api } from './api.js';
import { Alert } from './ui.js';

const A = 'rbac.authorization.svc.run/';
const TEMPLATE = 'svc.run/role-template';
const HIDDEN = 'svc.run/hidden';
const NEVER = new Set(['anonymous', 'authenticated']);

const annotation = (r, key) => (r.metadata.annotations || {})[A + key];
const jsonList = (v) => {
  try {
    const p = JSON.parse(v || '[]');
    return Array.isArray(p) ? p.filter((x) => typeof x === 'string') : [];
  } catch {
    return [];
  }
};

export const displayName = (r) => annotation(r, 'display-name') || r.metadata.name;
export const isTemplate = (r) => (r.metadata.labels || {})[TEMPLATE] === 'true';
/** Roles a user interface may show: not hidden, not anonymous or authenticated, not being deleted. */
export const visibleRoles = (roles) =>
  roles.filter((r) => !NEVER.has(r.metadata.name) && (r.metadata.labels || {})[HIDDEN] !== 'true' && !r.metadata.deletionTimestamp);
/** Roles offered for assignment: the visible ones, roles before templates. */
export const assignableRoles = (roles) => {
  const v = visibleRoles(roles);
  return [...v.filter((r) => !isTemplate(r)), ...v.filter(isTemplate)];
};

function RoleRow({ role, byName }) {
  const deps = jsonList(annotation(role, 'dependencies')).filter((d) => byName.has(d));
  const ui = jsonList(annotation(role, 'ui-permissions'));
  return html`<div class="tr" role="row" data-object-name=${role.metadata.name}>
    <span role="cell" class="name"><span data-field="display-name">${displayName(role)}</span> <code class="muted">${role.metadata.name}</code></span>
    <span role="cell" data-field="dependencies">${deps.length
      ? html`Depends on ${deps.map((d) => html`<span class="chip" data-dependency=${d}>${displayName(byName.get(d))}</span> `)}`
      : null}</span>
    <span role="cell" class="muted">${ui.map((p) => html`<code class="label">${p}</code> `)}</span>
  </div>`;
}

export function RolesPage() {
  const [roles, setRoles] = useState(null);
  const [error, setError] = useState('');
  useEffect(() => {
    api.get('/api/v1alpha1/roles').then(
      (r) => setRoles(r.items),
      (x) => setError(x.message),
    );
  }, []);
  if (!roles) return html`<section class="page" data-page="roles"><h1>Roles</h1><${Alert} message=${error} />${error ? null : html`<p class="muted">Loading…</p>`}</section>`;
  const visible = visibleRoles(roles);
  const byName = new Map(visible.map((r) => [r.metadata.name, r]));
  const plain = visible.filter((r) => !isTemplate(r));
  const modules = new Map();
  for (const t of visible.filter(isTemplate)) {
    const m = annotation(t, 'module') || 'Other';
    if (!modules.has(m)) modules.set(m, []);
    modules.get(m).push(t);
  }
  const sortedModules = [...modules.keys()].sort((a, b) => a.localeCompare(b));
  return html`<section class="page" data-page="roles" aria-labelledby="page-title">
    <header class="page-head"><h1 id="page-title">Roles</h1></header>
    <${Alert} message=${error} />
    <h2>Roles</h2>
    <div class="table" role="table" aria-label="Roles">
      ${plain.map((r) => html`<${RoleRow} key=${r.metadata.name} role=${r} byName=${byName} />`)}
    </div>
    <h2>Permission templates</h2>
    ${sortedModules.map(
      (m) => html`<section class="module" data-module=${m} key=${m} aria-label=${m}>
        <h3>${m}</h3>
        <div class="table" role="table" aria-label=${m}>
          ${modules.get(m).map((r) => html`<${RoleRow} key=${r.metadata.name} role=${r} byName=${byName} />`)}
        </div>
      </section>`,
    )}
  </section>`;
}
