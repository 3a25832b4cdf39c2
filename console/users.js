// The users route: users with their roles; a manager creates users and assigns roles, which the
// console writes as RoleBindings (one per user and role).
import { html, useEffect, useState } from './lib.js';
import { api, ApiError } from './api.js';
import { Alert, ErrorSummary, errorMap, Field } from './ui.js';
import { assignableRoles, displayName } from './roles.js';

const USERS = '/api/v1alpha1/users';
const ROLES = '/api/v1alpha1/roles';
const BINDINGS = '/api/v1alpha1/rolebindings';
const MANAGE = '["system:users:manage"]';

const boundTo = (b, user) => Array.isArray(b.subjects) && b.subjects.some((s) => s.kind === 'User' && s.name === user);

/** Names of the roles bound to `user`. */
const rolesOf = (bindings, user) => [...new Set(bindings.filter((b) => boundTo(b, user) && b.roleRef).map((b) => b.roleRef.name))];

/** Makes `user` hold exactly `wanted` among `choices`: creates and removes RoleBindings. */
async function assignRoles(user, wanted, current, bindings) {
  for (const role of wanted) {
    if (current.includes(role)) continue;
    const body = {
      apiVersion: 'v1alpha1',
      kind: 'RoleBinding',
      metadata: { name: `${user}-${role}`.slice(0, 253).replace(/-+$/, '') },
      roleRef: { apiGroup: '', kind: 'Role', name: role },
      subjects: [{ apiGroup: '', kind: 'User', name: user }],
    };
    try {
      await api.post(BINDINGS, body);
    } catch (err) {
      if (!(err instanceof ApiError) || err.status !== 409) throw err;
      await api.post(BINDINGS, { ...body, metadata: { generateName: `${user}-${role}-`.slice(0, 200) } });
    }
  }
  for (const role of current) {
    if (wanted.includes(role)) continue;
    for (const b of bindings.filter((x) => boundTo(x, user) && x.roleRef && x.roleRef.name === role)) {
      const others = b.subjects.filter((s) => !(s.kind === 'User' && s.name === user));
      const path = `${BINDINGS}/${encodeURIComponent(b.metadata.name)}`;
      if (others.length === 0) await api.del(path);
      else await api.patch(path, { subjects: others });
    }
  }
}

function RoleChoices({ roles, checked, onChange }) {
  if (!roles.length) return html`<p class="muted">No roles to assign.</p>`;
  return html`<fieldset class="role-choices">
    <legend>Roles</legend>
    ${roles.map(
      (r) => html`<label class="check" key=${r.metadata.name}>
        <input type="checkbox" name="roles" value=${r.metadata.name} checked=${checked.includes(r.metadata.name)}
          onChange=${(e) => onChange(e.currentTarget.checked ? [...checked, r.metadata.name] : checked.filter((n) => n !== r.metadata.name))} />
        ${displayName(r)} <code>${r.metadata.name}</code>
      </label>`,
    )}
  </fieldset>`;
}

function UserForm({ roles, onDone, onCancel }) {
  const [v, setV] = useState({ 'metadata.name': '', 'spec.displayName': '', 'spec.email': '', 'spec.password': '' });
  const [picked, setPicked] = useState([]);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const errors = errorMap(error);
  const set = (k) => (value) => setV((old) => ({ ...old, [k]: value }));
  const err = (k) => (errors[k] ? errors[k].join('; ') : undefined);

  async function save(e) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    const name = v['metadata.name'].trim();
    try {
      const spec = { displayName: v['spec.displayName'] };
      if (v['spec.email']) spec.email = v['spec.email'];
      if (v['spec.password']) spec.password = v['spec.password'];
      await api.post(USERS, { apiVersion: 'v1alpha1', kind: 'User', metadata: { name }, spec });
    } catch (x) {
      setBusy(false);
      return setError(x);
    }
    // The password is not kept once the user exists.
    setV((old) => ({ ...old, 'spec.password': '' }));
    try {
      await assignRoles(name, picked, [], []);
      onDone();
    } catch (x) {
      setError(new ApiError(x.status || 0, { detail: `User ${name} was created, but assigning roles failed: ${x.message}` }));
    } finally {
      setBusy(false);
    }
  }

  return html`<form class="panel" novalidate onSubmit=${save} aria-label="New user">
    <h2>New user</h2>
    <${ErrorSummary} error=${error} />
    <${Field} label="Username" name="metadata.name" value=${v['metadata.name']} onInput=${set('metadata.name')} error=${err('metadata.name')} required=${true} autocomplete="off" />
    <${Field} label="Display name" name="spec.displayName" value=${v['spec.displayName']} onInput=${set('spec.displayName')} error=${err('spec.displayName')} />
    <${Field} label="Email" name="spec.email" kind="email" value=${v['spec.email']} onInput=${set('spec.email')} error=${err('spec.email')} />
    <${Field} label="Password" name="spec.password" kind="password" value=${v['spec.password']} onInput=${set('spec.password')} error=${err('spec.password')} autocomplete="new-password" />
    <${RoleChoices} roles=${roles} checked=${picked} onChange=${setPicked} />
    <div class="actions">
      <button type="submit" class="primary" data-action="save" disabled=${busy}>${busy ? 'Saving…' : 'Save'}</button>
      <button type="button" data-action="cancel" onClick=${onCancel}>Cancel</button>
    </div>
  </form>`;
}

function AssignRoles({ user, roles, bindings, onDone, onCancel }) {
  const current = rolesOf(bindings, user);
  const [picked, setPicked] = useState(current);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  async function save(e) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await assignRoles(user, picked, current, bindings);
      onDone();
    } catch (x) {
      setError(x);
    } finally {
      setBusy(false);
    }
  }
  return html`<form class="panel inline" novalidate onSubmit=${save} aria-label=${`Roles of ${user}`}>
    <${ErrorSummary} error=${error} />
    <${RoleChoices} roles=${roles} checked=${picked} onChange=${setPicked} />
    <div class="actions">
      <button type="submit" class="primary" data-action="save" disabled=${busy}>Save</button>
      <button type="button" data-action="cancel" onClick=${onCancel}>Cancel</button>
    </div>
  </form>`;
}

export function UsersPage() {
  const [data, setData] = useState(null);
  const [error, setError] = useState('');
  const [open, setOpen] = useState(null); // null | 'create' | username
  const load = async () => {
    try {
      const [users, roles, bindings] = await Promise.all([api.get(USERS), api.get(ROLES).catch(() => ({ items: [] })), api.get(BINDINGS).catch(() => ({ items: [] }))]);
      setData({ users: users.items, roles: assignableRoles(roles.items), bindings: bindings.items, byName: new Map(roles.items.map((r) => [r.metadata.name, r])) });
      setError('');
    } catch (x) {
      setError(x.message);
    }
  };
  useEffect(() => {
    load();
  }, []);
  const done = () => {
    setOpen(null);
    load();
  };

  return html`<section class="page" data-page="users" aria-labelledby="page-title">
    <header class="page-head">
      <h1 id="page-title">Users</h1>
      <svc-permission permissions=${MANAGE}>
        <button class="primary" data-action="create" onClick=${() => setOpen('create')}>New user</button>
      </svc-permission>
    </header>
    <${Alert} message=${error} />
    ${open === 'create' && data ? html`<${UserForm} roles=${data.roles} onDone=${done} onCancel=${() => setOpen(null)} />` : null}
    ${!data
      ? html`<p class="muted">Loading…</p>`
      : html`<div class="table" role="table" aria-label="Users">
          <div class="tr th" role="row"><span role="columnheader">Username</span><span role="columnheader">Display name</span>
            <span role="columnheader">Email</span><span role="columnheader">Roles</span><span role="columnheader"></span></div>
          ${data.users.map((u) => {
            const name = u.metadata.name;
            const held = rolesOf(data.bindings, name);
            return html`<div class="tr" role="row" key=${name} data-object-name=${name}>
              <span role="cell" class="name">${name}${u.spec && u.spec.disabled ? html` <em class="badge">disabled</em>` : null}</span>
              <span role="cell">${(u.spec && u.spec.displayName) || ''}</span>
              <span role="cell">${(u.spec && u.spec.email) || ''}</span>
              <span role="cell" data-field="roles">${held.map((r) => html`<span class="chip">${data.byName.has(r) ? displayName(data.byName.get(r)) : r}</span> `)}</span>
              <span role="cell" class="row-actions">
                <svc-permission permissions=${MANAGE}>
                  <button data-action="assign-roles" onClick=${() => setOpen(open === name ? null : name)}>Roles…</button>
                </svc-permission>
              </span>
              ${open === name
                ? html`<div class="row-panel"><${AssignRoles} user=${name} roles=${data.roles} bindings=${data.bindings} onDone=${done} onCancel=${() => setOpen(null)} /></div>`
                : null}
            </div>`;
          })}
        </div>`}
  </section>`;
}
