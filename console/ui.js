// Small shared pieces: fields with their error, the error summary, objects by path.
import { html } from './lib.js';

/** `a.b.c` of an object, or undefined. */
export function getPath(obj, path) {
  return path.split('.').reduce((o, k) => (o && typeof o === 'object' ? o[k] : undefined), obj);
}

/** Sets (or, for undefined, deletes) `a.b.c`, creating objects on the way. */
export function setPath(obj, path, value) {
  const keys = path.split('.');
  let o = obj;
  for (const k of keys.slice(0, -1)) {
    if (!o[k] || typeof o[k] !== 'object' || Array.isArray(o[k])) o[k] = {};
    o = o[k];
  }
  const last = keys[keys.length - 1];
  if (value === undefined) delete o[last];
  else o[last] = value;
}

/** A problem's `errors: [{field, message}]` as a map from field to messages. */
export function errorMap(err) {
  const map = {};
  for (const e of (err && err.fieldErrors) || []) (map[e.field] = map[e.field] || []).push(e.message);
  return map;
}

const fieldId = (name) => `f-${name.replace(/[^A-Za-z0-9_-]/g, '_')}`;

/**
 * A labelled input named by its path. `kind`: text, password, email, number, checkbox, select,
 * textarea. With `error`, the input gets aria-invalid="true" and the message sits next to it.
 */
export function Field({ label, name, kind = 'text', value, onInput, error, options, hint, autocomplete, required }) {
  const id = fieldId(name);
  const invalid = error ? 'true' : undefined;
  const described = error ? `${id}-error` : hint ? `${id}-hint` : undefined;
  const common = { id, name, 'aria-invalid': invalid, 'aria-describedby': described, autocomplete, required };
  let input;
  if (kind === 'checkbox') {
    input = html`<input type="checkbox" ...${common} checked=${!!value} onChange=${(e) => onInput(e.currentTarget.checked)} />`;
  } else if (kind === 'select') {
    input = html`<select ...${common} value=${value ?? ''} onChange=${(e) => onInput(e.currentTarget.value)}>
      <option value="">—</option>
      ${options.map((o) => html`<option value=${o}>${o}</option>`)}
    </select>`;
  } else if (kind === 'textarea') {
    input = html`<textarea ...${common} rows="3" value=${value ?? ''} onInput=${(e) => onInput(e.currentTarget.value)}></textarea>`;
  } else {
    const type = kind === 'number' ? 'text' : kind;
    const inputmode = kind === 'number' ? 'decimal' : undefined;
    input = html`<input type=${type} inputmode=${inputmode} ...${common} value=${value ?? ''} onInput=${(e) => onInput(e.currentTarget.value)} />`;
  }
  return html`<div class=${`field${kind === 'checkbox' ? ' field-check' : ''}${error ? ' has-error' : ''}`}>
    <label for=${id}>${label}${required ? html`<span class="req" aria-hidden="true"> *</span>` : null}</label>
    ${input}
    ${hint && !error ? html`<p class="hint" id=${`${id}-hint`}>${hint}</p>` : null}
    ${error ? html`<p class="field-error" id=${`${id}-error`}>${error}</p>` : null}
  </div>`;
}

/** The visible error of a form or page: `[role=alert]`, listing field errors too. */
export function ErrorSummary({ error }) {
  if (!error) return null;
  const list = error.fieldErrors || [];
  return html`<div class="alert" role="alert">
    <strong>${error.status === 422 ? 'Please correct the highlighted fields.' : error.message}</strong>
    ${list.length ? html`<ul>${list.map((e) => html`<li><code>${e.field}</code>: ${e.message}</li>`)}</ul>` : null}
  </div>`;
}

/** An in-page error message outside forms. */
export function Alert({ message }) {
  return message ? html`<div class="alert" role="alert">${message}</div>` : null;
}

export function Empty({ children }) {
  return html`<p class="empty">${children}</p>`;
}

/** A ListResult's time as a short local string. */
export function when(ts) {
  if (!ts) return '';
  const d = new Date(ts);
  return Number.isNaN(d.getTime()) ? ts : d.toLocaleString();
}
