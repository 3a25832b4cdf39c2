// A form generated from a model's JSON Schema: one input per field of `spec`, named by its path
// (`spec.name`), plus metadata.name and labels. Saves with POST (create) or PUT (edit, with the
// stored metadata.version); a 422 puts each message next to its field (aria-invalid="true").
import { html, useState } from './lib.js';
import { api, ApiError } from './api.js';
import { ErrorSummary, errorMap, Field, getPath, setPath } from './ui.js';

const MAX_DEPTH = 4;

/** Follows `#/$defs/…` references of `root`; a reference to the whole object (`#`) is recursive. */
function deref(schema, root) {
  let s = schema;
  for (let i = 0; s && s.$ref && i < 16; i++) {
    if (s.$ref === '#') return { recursive: true };
    const m = /^#\/\$defs\/(.+)$/.exec(s.$ref);
    const target = m && root.$defs ? root.$defs[decodeURIComponent(m[1])] : undefined;
    if (!target) return {};
    const { $ref, ...rest } = s;
    s = { ...target, ...rest };
  }
  return s || {};
}

const typeOf = (s) => (Array.isArray(s.type) ? s.type.find((t) => t !== 'null') : s.type);
const labelOf = (path) => {
  const last = path.split('.').pop();
  return last.replace(/([a-z])([A-Z])/g, '$1 $2').replace(/^./, (c) => c.toUpperCase());
};

/** The inputs of a schema's object, depth first: [{path, label, kind, options, hint, required}]. */
export function fieldsOf(schema, root, prefix, depth = 0, required = false) {
  const s = deref(schema, root);
  if (s.recursive || depth > MAX_DEPTH) return [];
  const type = typeOf(s) ?? (s.properties ? 'object' : undefined);
  const base = { path: prefix, label: s.title || labelOf(prefix), hint: s.description, required };
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
      const items = deref(s.items || {}, root);
      if (['string', 'integer', 'number'].includes(typeOf(items)) && !items.enum) {
        return [{ ...base, kind: 'list', itemType: typeOf(items), hint: s.description || 'Comma-separated values' }];
      }
      return [{ ...base, kind: 'json', hint: s.description || 'JSON array' }];
    }
    case 'object':
      if (s.properties && Object.keys(s.properties).length) {
        const req = new Set(s.required || []);
        return Object.entries(s.properties).flatMap(([k, v]) => fieldsOf(v, root, `${prefix}.${k}`, depth + 1, req.has(k)));
      }
      return [{ ...base, kind: 'json', hint: s.description || 'JSON object' }];
    default:
      return [{ ...base, kind: 'json', hint: s.description || 'JSON value' }];
  }
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
 * props: route (group, version, kind, resource, schema), object (to edit) or undefined (create),
 * onDone(saved), onCancel().
 */
export function SchemaForm({ route, object, onDone, onCancel }) {
  const schema = route.schema || {};
  const fields = schema.properties && schema.properties.spec ? fieldsOf(schema.properties.spec, schema, 'spec', 0, (schema.required || []).includes('spec')) : [];
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
      const body = object ? structuredClone(object) : { apiVersion: `${route.group}/${route.version}`, kind: route.kind, metadata: {}, spec: {} };
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
      : html`<${Field} label="Name" name="metadata.name" value=${values['metadata.name']} onInput=${set('metadata.name')}
          error=${fieldError('metadata.name')} required=${true} hint="Lowercase letters, digits and dashes" />`}
    <${Field} label="Labels" name="metadata.labels" kind="textarea" value=${values['metadata.labels']} onInput=${set('metadata.labels')}
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
