// A model's objects with label and field selectors, read in keyset pages (`limit` + `continue`,
// docs/API.md §12) as the user scrolls, and kept live by a watch; create, edit and delete through
// the schema form. On a plugin route (spec.console.routes) the buttons are wrapped in the route's
// manage permissions; on a generated model page (models.js) they follow the user's rights on the
// model (`route.can`: create, update, delete).
//
// Paging (docs/API.md §9): the first page is read with `?limit=LIMIT`, each next one with the
// previous page's `continue`, when the end of the list comes near the viewport (an
// IntersectionObserver on the pager, or its "Load more" button). At most MAX_ROWS rows stay in the
// page: past that the earliest rows are dropped and a notice offers to go back to the top, so a
// walk through 50,000 objects keeps the DOM, the memory and every request small. A new filter,
// "Back to the top", or a watch that lost its place restarts the walk at the first page.
//
// Live (docs/API.md §9): the watch starts at the first page's resourceVersion. A change to a shown
// object updates its row in place (or removes it); an object added or modified elsewhere that
// sorts inside the loaded window (the default order, creationTimestamp descending then name) is
// inserted at its place; one that sorts after the last page read is left for the next page, which
// will hold it. Events that arrive while a page is being read wait until it is merged.
//
// A reference property (`route.references`, models.js) shows as links to the named objects; a
// page opened with `?name=` shows that object (a field selector on metadata.name, which the filter
// form shows).
import { html, useEffect, useRef, useState } from './lib.js';
import { api, watch } from './api.js';
import { SchemaForm } from './form.js';
import { Alert, Empty, when } from './ui.js';

/** Objects per page request. */
const LIMIT = 50;
/** Rows kept in the page; earlier ones are dropped as the walk goes on. */
const MAX_ROWS = 500;
/** How far below the viewport the end of the list starts loading the next page. */
const AHEAD = '800px';

/** Renders its children when the user may `verb`: `route.can[verb]` on a model page, else the manage permissions. */
function Allowed({ route, verb, children }) {
  if (route.can) return route.can[verb] ? children : null;
  return html`<svc-permission permissions=${JSON.stringify(route.managePermissions)}>${children}</svc-permission>`;
}

const nameOf = (o) => o.metadata.name;

/** The gateway's default list order (docs/API.md §4): < 0 when `a` comes before `b`. */
function compare(a, b) {
  const ta = a.metadata.creationTimestamp || '';
  const tb = b.metadata.creationTimestamp || '';
  if (ta !== tb) return ta > tb ? -1 : 1;
  return nameOf(a) < nameOf(b) ? -1 : nameOf(a) > nameOf(b) ? 1 : 0;
}

/**
 * A watch event applied to a walk's rows: in place for a shown object (never going back to an
 * older version), inserted when it sorts inside the loaded window, else left to a later page.
 */
function apply(w, ev) {
  const o = ev.object;
  if (!o || !o.metadata) return;
  const i = w.rows.findIndex((r) => nameOf(r) === nameOf(o));
  if (ev.type === 'DELETED') {
    if (i >= 0) w.rows.splice(i, 1);
    return;
  }
  if (i >= 0) {
    if ((o.metadata.version ?? 0) >= (w.rows[i].metadata.version ?? 0)) w.rows[i] = o;
    return;
  }
  if (w.dropped > 0 && (w.rows.length === 0 || compare(o, w.rows[0]) < 0)) return; // before the window
  if (w.cont !== '' && (!w.end || compare(o, w.end) >= 0)) return; // after the last page read
  const at = w.rows.findIndex((r) => compare(o, r) < 0);
  w.rows.splice(at < 0 ? w.rows.length : at, 0, o);
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
  const [restarts, setRestarts] = useState(0);
  const [, setTick] = useState(0);
  const [error, setError] = useState('');
  const [editing, setEditing] = useState(null); // null | 'new' | object
  /** The current walk: rows shown, `cont` (undefined before the first page, '' at the end), `end` (last object read). */
  const walk = useRef(null);
  const pager = useRef(null);
  const refresh = () => setTick((t) => t + 1);

  /** Reads the page after the walk's end and merges it; returns it (undefined on failure). */
  const loadPage = async (w) => {
    if (!w || w.closed || w.loading || w.cont === '') return undefined;
    const q = new URLSearchParams({ limit: String(LIMIT) });
    if (w.cont) q.set('continue', w.cont);
    if (w.selectors.labelSelector) q.set('labelSelector', w.selectors.labelSelector);
    if (w.selectors.fieldSelector) q.set('fieldSelector', w.selectors.fieldSelector);
    w.loading = true;
    w.failed = false;
    refresh();
    try {
      const page = await api.get(`${w.path}?${q}`);
      if (w.closed) return undefined;
      const shown = new Set(w.rows.map(nameOf));
      w.rows.push(...page.items.filter((o) => !shown.has(nameOf(o))));
      if (page.items.length) w.end = page.items[page.items.length - 1];
      w.cont = page.continue || '';
      if (w.rows.length > MAX_ROWS) w.dropped += w.rows.splice(0, w.rows.length - MAX_ROWS).length;
      setError('');
      return page;
    } catch (err) {
      w.failed = true; // no automatic retry; "Load more" tries again
      if (!w.closed) setError(err.message);
      return undefined;
    } finally {
      w.loading = false;
      for (const ev of w.pending.splice(0)) apply(w, ev);
      refresh();
    }
  };

  // A walk per model, selectors and restart: the first page, then the watch from its resourceVersion.
  useEffect(() => {
    const w = { path: route.path, selectors, rows: [], cont: undefined, end: null, dropped: 0, loading: false, failed: false, pending: [], closed: false, stop: () => {} };
    walk.current = w;
    setError('');
    loadPage(w).then((page) => {
      if (!page || w.closed) return;
      w.stop = watch(w.path, { ...selectors, resourceVersion: page.resourceVersion }, (ev) => {
        if (w.closed || ev.type === 'BOOKMARK') return;
        if (ev.type === 'ERROR') {
          // The feed no longer holds our place: stop before the socket reconnects, read again.
          w.stop();
          setRestarts((n) => n + 1);
        } else if (w.loading) {
          w.pending.push(ev);
        } else {
          apply(w, ev);
          refresh();
        }
      });
    });
    return () => {
      w.closed = true;
      w.stop();
    };
  }, [route.path, selectors.labelSelector, selectors.fieldSelector, restarts]);

  /** The pager is within AHEAD of the viewport, in the layout of now (rendered rows included). */
  const nearEnd = () => !!pager.current && pager.current.getBoundingClientRect().top < window.innerHeight + parseInt(AHEAD, 10);
  // The next page when the pager comes within AHEAD of the viewport. The observer's news may be
  // older than the rows of a page merged since, hence nearEnd().
  useEffect(() => {
    if (typeof IntersectionObserver === 'undefined' || !pager.current) return undefined;
    const io = new IntersectionObserver(
      (entries) => {
        const w = walk.current;
        if (entries.some((e) => e.isIntersecting) && w && !w.failed && nearEnd()) loadPage(w);
      },
      { rootMargin: `0px 0px ${AHEAD} 0px` },
    );
    io.observe(pager.current);
    return () => io.disconnect();
  }, []);
  // After a page is shown the pager may still be near (a tall window): the observer does not fire
  // again for an element that stays in view, so check after the render that shows the page (not
  // after an older one, whose layout lacks the rows that have arrived since).
  const w = walk.current;
  const shown = w && `${w.rows.length} ${w.cont}`;
  useEffect(() => {
    if (!w || w !== walk.current || w.loading || w.failed || !w.cont || shown !== `${w.rows.length} ${w.cont}`) return;
    if (typeof IntersectionObserver !== 'undefined' && nearEnd()) loadPage(w);
  });

  const applyFilters = (e) => {
    e.preventDefault();
    setSelectors({ ...draft });
    if (draft.labelSelector === selectors.labelSelector && draft.fieldSelector === selectors.fieldSelector) setRestarts((n) => n + 1);
  };
  const backToTop = () => {
    window.scrollTo(0, 0);
    setRestarts((n) => n + 1);
  };
  /** After a write of ours: the object as stored now (or gone), as a watch event would give it. */
  const reread = async (name) => {
    const w = walk.current;
    try {
      const o = await api.get(`${route.path}/${encodeURIComponent(name)}`);
      if (w && !w.closed) apply(w, { type: 'MODIFIED', object: o });
    } catch (err) {
      if (err.status !== 404) throw err;
      if (w && !w.closed) apply(w, { type: 'DELETED', object: { metadata: { name } } });
    }
    refresh();
  };
  const remove = async (name) => {
    try {
      await api.del(`${route.path}/${encodeURIComponent(name)}`);
      await reread(name);
    } catch (err) {
      setError(err.message);
    }
  };
  const saved = (object) => {
    setEditing(null);
    if (object && object.metadata) reread(object.metadata.name).catch((err) => setError(err.message));
  };

  const rows = w ? w.rows : [];
  const started = w && w.cont !== undefined;
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
    ${w && w.dropped > 0
      ? html`<p class="notice" data-field="dropped">${w.dropped} earlier ${w.dropped === 1 ? 'row is' : 'rows are'} no longer shown, to keep the page fast.
          <button data-action="back-to-top" onClick=${backToTop}>Back to the top</button></p>`
      : null}
    ${!started
      ? error ? null : html`<p class="muted">Loading…</p>`
      : rows.length === 0
        ? html`<${Empty}>No ${route.title.toLowerCase()} match.</${Empty}>`
        : html`<div class="table" role="table" aria-label=${route.title}>
            <div class="tr th" role="row"><span role="columnheader">Name</span><span role="columnheader">Summary</span>
              <span role="columnheader">Labels</span><span role="columnheader">Created</span><span role="columnheader"></span></div>
            ${rows.map(
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
    <nav class="pager" aria-label="More objects" ref=${pager}>
      ${w && w.cont
        ? html`<button data-action="load-more" disabled=${w.loading} onClick=${() => loadPage(w)}>${w.loading ? 'Loading…' : 'Load more'}</button>`
        : null}
      ${started && w.cont === '' && rows.length > 0 ? html`<span data-field="end">End of the list</span>` : null}
      ${started ? html`<span data-field="shown">${rows.length} shown</span>` : null}
    </nav>
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
