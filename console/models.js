// A page for every model the signed-in user may list (docs/API.md §9), whether or not its plugin
// declares a console route: menu entry `model:<group>/<version>/<plural>` (group empty for the
// platform kinds), the same live list and schema form as a plugin route.
//
// Which models: discovery (GET /apis, /apis/{g}/{v}, /api/v1alpha1) lists what the caller may
// `get` or `list`; GraphQL `canI` (the gateway's own authorizer, asked for the caller) keeps those
// it may `list`. On a page, `canI` also decides the create, edit and delete buttons (the user's
// `create`, `update` and `delete` rights on the model, not UI permissions), and the schema comes
// from the group-version's OpenAPI document, which the caller reads like discovery.
//
// References (x-svc-ref, docs/API.md §13): the OpenAPI schema keeps `x-svc-ref` on a property;
// the page shows its value as a link (`a[data-ref]`) to the target model's page, opened on the
// named object (`?name=`). The target's plural comes from discovery of its group-version; a
// target the caller cannot see is shown as plain text.
import { html, useEffect, useState } from './lib.js';
import { api, collectionPath, request } from './api.js';
import { deref } from './form.js';
import { ResourcePage } from './resource.js';
import { Alert } from './ui.js';

const PLATFORM_VERSION = 'v1alpha1';
/** The gateway's GraphQL alias limit is 30 per document. */
const ALIASES_PER_QUERY = 25;

export const modelRouteName = (group, version, plural) => `model:${group}/${version}/${plural}`;

/** Answers `canI` for each `{verb, group, version, resource}`, in order (false when not answered). */
export async function canI(questions) {
  const out = [];
  for (let i = 0; i < questions.length; i += ALIASES_PER_QUERY) {
    const batch = questions.slice(i, i + ALIASES_PER_QUERY);
    const fields = batch.map(
      (q, j) => `q${j}: canI(verb: ${JSON.stringify(q.verb)}, group: ${JSON.stringify(q.group)}, version: ${JSON.stringify(q.version)}, resource: ${JSON.stringify(q.resource)})`,
    );
    const res = await request('POST', '/graphql', { body: { query: `{ ${fields.join(' ')} }` } });
    batch.forEach((_, j) => out.push(!!(res && res.data && res.data[`q${j}`] === true)));
  }
  return out;
}

/** Discovery's resources of one group-version (none when the caller sees nothing there: 404). */
async function resourcesOf(group, version) {
  const path = group ? `/apis/${group}/${version}` : `/api/${version}`;
  try {
    const list = await api.get(path);
    return list.resources.filter((r) => !r.name.includes('/')).map((r) => ({ group, version, resource: r.name, kind: r.kind }));
  } catch (x) {
    if (x.status === 404 || x.status === 403) return [];
    throw x;
  }
}

/** The models the caller may list: [{group, version, resource, kind}]. */
export async function listableModels() {
  const groups = await api.get('/apis');
  const found = (
    await Promise.all([
      resourcesOf('', PLATFORM_VERSION),
      ...groups.groups.flatMap((g) => g.versions.map((v) => resourcesOf(g.name, v.version))),
    ])
  ).flat();
  const allowed = await canI(found.map((m) => ({ ...m, verb: 'list' })));
  return found.filter((_, i) => allowed[i]);
}

const upperFirst = (s) => s.charAt(0).toUpperCase() + s.slice(1);

/** The console route of a model. */
export function modelRoute(m) {
  const name = modelRouteName(m.group, m.version, m.resource);
  const apiVersion = m.group ? `${m.group}/${m.version}` : m.version;
  return {
    name,
    title: upperFirst(m.resource),
    subtitle: apiVersion,
    model: true,
    meta: { permissions: [] },
    view: ModelPage,
    config: { name, title: upperFirst(m.resource), subtitle: apiVersion, kind: m.kind, group: m.group, version: m.version, resource: m.resource, path: collectionPath(m.group, m.version, m.resource) },
  };
}

/** The model's schema: a `$ref` into its group-version's OpenAPI document (the body of its POST, or the items of its list). */
async function schemaOf(route) {
  const doc = await api.get(route.group ? `/openapi/v3/apis/${route.group}/${route.version}` : `/openapi/v3/api/${route.version}`);
  const ops = (doc.paths && doc.paths[route.path]) || {};
  const body = (op, at) => op && at(op) && at(op).content && at(op).content['application/json'] && at(op).content['application/json'].schema;
  let schema = body(ops.post, (op) => op.requestBody);
  if (!schema) {
    const list = body(ops.get, (op) => op.responses && op.responses['200']);
    const name = list && list.$ref && list.$ref.split('/').pop();
    const envelope = name && doc.components && doc.components.schemas && doc.components.schemas[name];
    schema = envelope && envelope.properties && envelope.properties.items && envelope.properties.items.items;
  }
  if (!schema) throw new Error(`the API reference does not describe ${route.path}`);
  return { schema, schemaRoot: doc };
}

/**
 * The reference properties of a model schema, down to a few levels: [{path, many, ref}] with
 * `path` the property's keys from the object's root (`['spec', 'contact']`).
 */
function referencesIn(schema, root) {
  const out = [];
  const walk = (s, path, seen) => {
    const d = deref(s, root, seen);
    if (d.recursive || path.length > 4) return;
    const ref = d['x-svc-ref'];
    if (ref && typeof ref === 'object' && typeof ref.kind === 'string' && path.length) {
      out.push({ path, many: d.type === 'array' || (Array.isArray(d.type) && d.type.includes('array')), ref });
      return;
    }
    for (const [k, p] of Object.entries(d.properties || {})) {
      if (path.length === 0 && (k === 'metadata' || k === 'apiVersion' || k === 'kind')) continue;
      walk(p, [...path, k], new Set(seen));
    }
  };
  walk(schema, [], new Set());
  return out;
}

/** The references of a model with the console page of each target (null when the caller cannot see it). */
async function referencesOf(schema, root) {
  const refs = referencesIn(schema, root);
  const pages = new Map();
  for (const { ref } of refs) {
    const gv = `${ref.group || ''}/${ref.version}`;
    if (!pages.has(gv)) pages.set(gv, resourcesOf(ref.group || '', ref.version).catch(() => []));
  }
  return Promise.all(
    refs.map(async (r) => {
      const found = (await pages.get(`${r.ref.group || ''}/${r.ref.version}`)).find((m) => m.kind === r.ref.kind);
      return { ...r, page: found ? `/console/${modelRouteName(found.group, found.version, found.resource)}` : null };
    }),
  );
}

/** A model page: loads the schema and the caller's rights, then shows the model like a plugin route. */
export function ModelPage({ route }) {
  const [ready, setReady] = useState(null);
  const [error, setError] = useState('');
  useEffect(() => {
    let cancelled = false;
    const verbs = ['create', 'update', 'delete'];
    Promise.all([schemaOf(route), canI(verbs.map((verb) => ({ verb, group: route.group, version: route.version, resource: route.resource })))]).then(
      async ([schema, [create, update, remove]]) => {
        const references = await referencesOf(schema.schema, schema.schemaRoot).catch(() => []);
        if (!cancelled) setReady({ ...route, ...schema, references, can: { create, update, delete: remove } });
      },
      (x) => !cancelled && setError(`This page could not be loaded: ${x.message}`),
    );
    return () => {
      cancelled = true;
    };
  }, [route.name]);
  if (error) return html`<section class="page" data-page=${route.name}><h1>${route.title}</h1><${Alert} message=${error} /></section>`;
  if (!ready) return html`<p class="muted">Loading…</p>`;
  return html`<${ResourcePage} route=${ready} />`;
}
