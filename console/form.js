// A form generated from a model's JSON Schema: metadata.name and labels, then one input per field
// of the object's other top-level properties (`spec`, or `rules` of a Role), each named by its
// path (`spec.name`) and labelled by its path too ("Metadata › Name" and "Spec › Name" are told
// apart). Saves with POST (create) or PUT (edit, with the stored metadata.version); a 422 puts
// each message next to its field (aria-invalid="true").
//
// The schema is a plugin route's model schema (references `#/$defs/…`, `#` for the whole object),
// or, on a generated model page, a `$ref` into the group-version's OpenAPI document
// (`#/components/schemas/…`); references are JSON pointers into `route.schemaRoot` then.
import { html, useState } from './lib.js';
import { api, ApiError } from './api.js';
import { ErrorSummary, errorMap, Field, getPath, setPath } from './ui.js';

const MAX_DEPTH = 4;
/** Top-level properties the form does not edit as fields. */
const NOT_FIELDS = new Set(['apiVersion', 'kind', 'metadata', 'status']);

/** The node a local reference (`#`, `#/a/b`) points at in `root`, or undefined. */
function pointer(root, ref) {
  if (ref === '#') return root;
  if (!ref.startsWith('#/')) return undefined;
  return ref
    .slice(2)
    .split('/')
    .map((k) => decodeURIComponent(k).replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((o, k) => (o && typeof o === 'object' ? o[k] : undefined), root);
}

/**
 * Follows the references of `schema` in `root`. A reference already followed on the way down
 * (`seen`: the whole object, or an ancestor) is recursive: `{recursive: true}`. Adds the
 * references it follows to `seen`.
 */
export function deref(schema, root, seen) {
  let s = schema;
  for (let i = 0; s && s.$ref && i < 16; i++) {
    if (seen.has(s.$ref)) return { recursive: true };
    const target = pointer(root, s.$ref);
    if (!target) return {};
    seen.add(s.$ref);
    const { $ref, ...rest } = s;
    s = { ...target, ...rest };
  }
  return s || {};
}

const typeOf = (s) => (Array.isArray(s.type) ? s.type.find((t) => t !== 'null') : s.type);
const words = (key) => key.replace(/([a-z])([A-Z])/g, '$1 $2').replace(/^./, (c) => c.toUpperCase());
/** A label from a path: `metadata.name` → "Metadata › Name", `spec.firstName` → "Spec › First Name". */
const labelOf = (path) => path.split('.').map(words).join(' › ');

/** The inputs of a schema's object, depth first: [{path, label, kind, options, hint, required}]. */
export function fieldsOf(schema, root, prefix, depth = 0, required = false, seen = new Set(['#']), parent = '') {
  const ancestors = new Set(seen);
  const s = deref(schema, root, ancestors);
  if (s.recursive || depth > MAX_DEPTH) return [];
  const type = typeOf(s) ?? (s.properties ? 'object' : undefined);
  const own = s.title || words(prefix.split('.').pop());
  const label = parent ? `${parent} › ${own}` : own;
  const base = { path: prefix, label, hint: s.description, required };
  if (Array.isArray(s.enum) && s.enum.every((v) => typeof v === 'string')) return [{ ...base, kind: 'select', options: s.enum }];
  switch (type) {
    case 'string':
      return [{ ...base, kind: 'text' }];
    case 'integer':
      return [{ ...base, kind: 'integer' }];
    case 'number':
      return [{ ...base, kind: 'number' }];
    case 'boolean':
      return [{ ...base, kind: 'checkbox' }];
    case 'array': {
      const items = deref(s.items || {}, root, new Set(ancestors));
      if (['string', 'integer', 'number'].includes(typeOf(items)) && !items.enum) {
        return [{ ...base, kind: 'list', itemType: typeOf(items), hint: s.description || 'Comma-separated values' }];
      }
      return [{ ...base, kind: 'json', hint: s.description || 'JSON array' }];
    }
    case 'object':
      if (s.properties && Object.keys(s.properties).length) {
        const req = new Set(s.required || []);
        return Object.entries(s.properties).flatMap(([k, v]) => fieldsOf(v, root, `${prefix}.${k}`, depth + 1, req.has(k), ancestors, label));
      }
      return [{ ...base, kind: 'json', hint: s.description || 'JSON object' }];
    default:
      return [{ ...base, kind: 'json', hint: s.description || 'JSON value' }];
  }
}

/** The model's object schema and the fields of its top-level properties (spec, …). */
export function modelFields(route) {
  const root = route.schemaRoot || route.schema || {};
  const seen = new Set(['#']);
  const model = deref(route.schema || {}, root, seen);
  const req = new Set(model.required || []);
  const fields = Object.entries(model.properties || {})
    .filter(([k]) => !NOT_FIELDS.has(k))
    .flatMap(([k, v]) => fieldsOf(v, root, k, 0, req.has(k), seen));
  return { model, fields };
}

/** The form's text for a stored value. */
function display(field, v) {
  if (v === undefined || v === null) return field.kind === 'checkbox' ? false : '';
  if (field.kind === 'checkbox') return !!v;
  if (field.kind === 'list') return Array.isArray(v) ? v.join(', ') : String(v);
  if (field.kind === 'json') return JSON.stringify(v);
  return String(v);
}

/** The value to send for a field's text (a value the server will refuse is sent as typed). */
function parse(field, raw) {
  if (field.kind === 'checkbox') return raw ? true : undefined;
  if (raw === undefined || raw === '') return undefined;
  const text = String(raw).trim();
  if (field.kind === 'integer') return /^-?\d+$/.test(text) ? Number(text) : text;
  if (field.kind === 'number') return text !== '' && Number.isFinite(Number(text)) ? Number(text) : text;
  if (field.kind === 'list') {
    const items = text.split(',').map((x) => x.trim()).filter(Boolean);
    return field.itemType === 'string' ? items : items.map((x) => (Number.isFinite(Number(x)) ? Number(x) : x));
  }
  if (field.kind === 'json') {
    try {
      return JSON.parse(text);
    } catch {
      throw new ApiError(422, { detail: 'invalid JSON', errors: [{ field: field.path, message: 'must be valid JSON' }] });
    }
  }
  return raw;
}

const labelsText = (labels) => Object.entries(labels || {}).map(([k, v]) => `${k}=${v}`).join('\n');
function parseLabels(text) {
  const out = {};
  for (const line of String(text || '').split(/[\n,]/)) {
    const t = line.trim();
    if (!t) continue;
    const eq = t.indexOf('=');
    if (eq < 0) out[t] = '';
    else out[t.slice(0, eq).trim()] = t.slice(eq + 1).trim();
  }
  return out;
}

/**
 * props: route (path, group, version, kind, schema and, on a model page, schemaRoot), object (to edit)
 * or undefined (create), onDone(saved), onCancel().
 */
export function SchemaForm({ route, object, onDone, onCancel }) {
  const [{ model, fields }] = useState(() => modelFields(route));
  const [values, setValues] = useState(() => {
    const v = { 'metadata.name': object ? object.metadata.name : '', 'metadata.labels': labelsText(object && object.metadata.labels) };
    for (const f of fields) v[f.path] = display(f, object ? getPath(object, f.path) : undefined);
    return v;
  });
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const errors = errorMap(error);
  const set = (path) => (value) => setValues((old) => ({ ...old, [path]: value }));
  const collection = route.path;

  async function save(e) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const body = object
        ? structuredClone(object)
        : { apiVersion: route.group ? `${route.group}/${route.version}` : route.version, kind: route.kind, metadata: {} };
      if (!object && model.properties && model.properties.spec) body.spec = {};
      delete body.status;
      if (!object) body.metadata.name = values['metadata.name'].trim();
      const labels = parseLabels(values['metadata.labels']);
      if (Object.keys(labels).length) body.metadata.labels = labels;
      else delete body.metadata.labels;
      for (const f of fields) setPath(body, f.path, parse(f, values[f.path]));
      const saved = object
        ? await api.put(`${collection}/${encodeURIComponent(object.metadata.name)}`, body)
        : await api.post(collection, body);
      onDone(saved);
    } catch (err) {
      setError(err instanceof ApiError ? err : new ApiError(0, { detail: String(err) }));
    } finally {
      setBusy(false);
    }
  }

  const fieldError = (path) => (errors[path] ? errors[path].join('; ') : undefined);
  return html`<form class="panel" novalidate onSubmit=${save} aria-label=${object ? `Edit ${object.metadata.name}` : `New ${route.kind}`}>
    <h2>${object ? `Edit ${object.metadata.name}` : `New ${route.kind}`}</h2>
    <${ErrorSummary} error=${error} />
    ${object
      ? null
      : html`<${Field} label=${labelOf('metadata.name')} name="metadata.name" value=${values['metadata.name']} onInput=${set('metadata.name')}
          error=${fieldError('metadata.name')} required=${true} hint="Lowercase letters, digits and dashes" />`}
    <${Field} label=${labelOf('metadata.labels')} name="metadata.labels" kind="textarea" value=${values['metadata.labels']} onInput=${set('metadata.labels')}
      error=${Object.keys(errors).filter((k) => k.startsWith('metadata.labels')).map((k) => errors[k].join('; ')).join('; ') || undefined}
      hint="One key=value per line" />
    ${fields.map(
      (f) => html`<${Field}
        label=${f.label}
        name=${f.path}
        kind=${f.kind === 'integer' || f.kind === 'number' ? 'number' : f.kind === 'list' ? 'text' : f.kind === 'json' ? 'textarea' : f.kind}
        options=${f.options}
        hint=${f.hint}
        required=${f.required}
        value=${values[f.path]}
        onInput=${set(f.path)}
        error=${fieldError(f.path) || Object.keys(errors).filter((k) => k.startsWith(`${f.path}.`)).map((k) => errors[k].join('; ')).join('; ') || undefined}
      />`,
    )}
    <div class="actions">
      <button type="submit" class="primary" data-action="save" disabled=${busy}>${busy ? 'Saving…' : 'Save'}</button>
      <button type="button" data-action="cancel" onClick=${onCancel}>Cancel</button>
    </div>
  </form>`;
}
