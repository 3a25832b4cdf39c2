// A model's objects with label and field selectors and paging, kept live by a watch; create, edit
// and delete through the schema form. On a plugin route (spec.console.routes) the buttons are
// wrapped in the route's manage permissions; on a generated model page (models.js) they follow
// the user's rights on the model (`route.can`: create, update, delete). A reference property
// (`route.references`, models.js) shows as links to the named objects; a page opened with
// `?name=` shows that object (a field selector on metadata.name, which the filter form shows).
import { html, useEffect, useRef, useState } from './lib.js';
import { api, watch } from './api.js';
import { SchemaForm } from './form.js';
import { Alert, Empty, when } from './ui.js';

const PAGE_SIZE = 20;

/** Renders its children when the user may `verb`: `route.can[verb]` on a model page, else the manage permissions. */
function Allowed({ route, verb, children }) {
  if (route.can) return route.can[verb] ? children : null;
  return html`<svc-permission permissions=${JSON.stringify(route.managePermissions)}>${children}</svc-permission>`;
}

/** Follows a console link without reloading the page (app.js listens to `svc-navigate`). */
function follow(e) {
  if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  e.preventDefault();
  history.pushState(null, '', e.currentTarget.getAttribute('href'));
  window.dispatchEvent(new Event('svc-navigate'));
}

/** The values of an object's reference properties, as links to the named objects. */
function References({ route, object }) {
  const refs = route.references || [];
  const shown = refs
    .map((r) => {
      const value = r.path.reduce((o, k) => (o && typeof o === 'object' ? o[k] : undefined), object);
      const names = (Array.isArray(value) ? value : [value]).filter((n) => typeof n === 'string' && n !== '');
      return { r, names };
    })
    .filter((x) => x.names.length);
  if (!shown.length) return null;
  return html`<span class="refs">${shown.map(
    ({ r, names }) => html` · ${r.path.at(-1)}: ${names.map((n, i) => html`${i ? ', ' : ''}${r.page
      ? html`<a href=${`${r.page}?name=${encodeURIComponent(n)}`} data-ref=${r.path.join('.')} data-ref-kind=${r.ref.kind} onClick=${follow}>${n}</a>`
      : n}`)}`,
  )}</span>`;
}

export function ResourcePage({ route }) {
  const opened = new URLSearchParams(location.search).get('name');
  const initial = { labelSelector: '', fieldSelector: opened ? `metadata.name=${opened}` : '' };
  const [selectors, setSelectors] = useState(initial);
  const [draft, setDraft] = useState(initial);
  const [page, setPage] = useState(1);
  const [list, setList] = useState(null);
  const [error, setError] = useState('');
  const [editing, setEditing] = useState(null); // null | 'new' | object
  const latest = useRef(0);

  const query = () => {
    const q = new URLSearchParams({ page: String(page), size: String(PAGE_SIZE) });
    if (selectors.labelSelector) q.set('labelSelector', selectors.labelSelector);
    if (selectors.fieldSelector) q.set('fieldSelector', selectors.fieldSelector);
    return q;
  };
  const load = async () => {
    const n = ++latest.current;
    try {
      const result = await api.get(`${route.path}?${query()}`);
      if (n === latest.current) {
        setList(result);
        setError('');
      }
      return result;
    } catch (err) {
      if (n === latest.current) setError(err.message);
      return undefined;
    }
  };

  // List, then watch from the list's resourceVersion; any change reloads the page shown.
  useEffect(() => {
    let stop = () => {};
    let cancelled = false;
    let timer;
    load().then((result) => {
      if (cancelled || !result) return;
      stop = watch(route.path, { ...selectors, resourceVersion: result.resourceVersion }, (ev) => {
        if (ev.type === 'BOOKMARK') return;
        clearTimeout(timer);
        timer = setTimeout(load, 50);
      });
    });
    return () => {
      cancelled = true;
      clearTimeout(timer);
      stop();
    };
  }, [route.path, selectors.labelSelector, selectors.fieldSelector, page]);

  const applyFilters = (e) => {
    e.preventDefault();
    setPage(1);
    setSelectors({ ...draft });
  };
  const remove = async (name) => {
    try {
      await api.del(`${route.path}/${encodeURIComponent(name)}`);
      await load();
    } catch (err) {
      setError(err.message);
    }
  };
  const saved = () => {
    setEditing(null);
    load();
  };

  const items = list ? list.items : [];
  return html`<section class="page" data-page=${route.name} aria-labelledby="page-title">
    <header class="page-head">
      <h1 id="page-title">${route.title}${route.subtitle ? html` <small class="muted">${route.subtitle}</small>` : null}</h1>
      <${Allowed} route=${route} verb="create">
        <button class="primary" data-action="create" onClick=${() => setEditing('new')}>New ${route.kind}</button>
      </${Allowed}>
    </header>
    <form class="filters" onSubmit=${applyFilters} role="search">
      <label>Label selector <input name="labelSelector" placeholder="app=web,tier!=db" value=${draft.labelSelector}
        onInput=${(e) => setDraft({ ...draft, labelSelector: e.currentTarget.value })} /></label>
      <label>Field selector <input name="fieldSelector" placeholder="spec.name=Ada" value=${draft.fieldSelector}
        onInput=${(e) => setDraft({ ...draft, fieldSelector: e.currentTarget.value })} /></label>
      <button type="submit" data-action="filter">Filter</button>
    </form>
    <${Alert} message=${error} />
    ${editing
      ? html`<${SchemaForm} key=${editing === 'new' ? 'new' : editing.metadata.name} route=${route}
          object=${editing === 'new' ? undefined : editing} onDone=${saved} onCancel=${() => setEditing(null)} />`
      : null}
    ${list === null
      ? html`<p class="muted">Loading…</p>`
      : items.length === 0
        ? html`<${Empty}>No ${route.title.toLowerCase()} match.</${Empty}>`
        : html`<div class="table" role="table" aria-label=${route.title}>
            <div class="tr th" role="row"><span role="columnheader">Name</span><span role="columnheader">Summary</span>
              <span role="columnheader">Labels</span><span role="columnheader">Created</span><span role="columnheader"></span></div>
            ${items.map(
              (o) => html`<div class="tr" role="row" key=${o.metadata.name} data-object-name=${o.metadata.name}>
                <span role="cell" class="name">${o.metadata.name}${o.metadata.deletionTimestamp ? html` <em class="badge">deleting</em>` : null}</span>
                <span role="cell" class="summary">${summary(o, route.references)}<${References} route=${route} object=${o} /></span>
                <span role="cell">${Object.entries(o.metadata.labels || {}).map(([k, v]) => html`<code class="label">${k}=${v}</code> `)}</span>
                <span role="cell" class="muted">${when(o.metadata.creationTimestamp)}</span>
                <span role="cell" class="row-actions">
                  <${Allowed} route=${route} verb="update">
                    <button data-action="edit" onClick=${() => setEditing(o)}>Edit</button>
                  </${Allowed}>
                  <${Allowed} route=${route} verb="delete">
                    <button class="danger" data-action="delete" onClick=${() => remove(o.metadata.name)}>Delete</button>
                  </${Allowed}>
                </span>
              </div>`,
            )}
          </div>`}
    ${list
      ? html`<nav class="pager" aria-label="Pages">
          <button data-action="prev" disabled=${!list.hasPrevious} onClick=${() => setPage(page - 1)}>Previous</button>
          <span data-field="page">Page ${list.page} of ${Math.max(1, list.totalPages)} · ${list.total} total</span>
          <button data-action="next" disabled=${!list.hasNext} onClick=${() => setPage(page + 1)}>Next</button>
        </nav>`
      : null}
  </section>`;
}

/** The first few scalar values of an object's spec (or, without one, of its other top-level fields), for the list; references are shown as links instead. */
function summary(o, references = []) {
  const { apiVersion, kind, metadata, status, ...rest } = o;
  const spec = o.spec !== undefined ? o.spec : rest;
  if (!spec || typeof spec !== 'object') return '';
  return Object.entries(spec)
    .filter(([k, v]) => v !== null && typeof v !== 'object' && !references.some((r) => r.path.join('.') === (o.spec !== undefined ? `spec.${k}` : k)))
    .slice(0, 4)
    .map(([k, v]) => `${k}: ${v}`)
    .join(' · ');
}
