// UI permissions (docs/API.md §9): what the signed-in user holds, and the global
// permission wrapper <svc-permission permissions='["a:b:c"]'>…</svc-permission>, registered once
// with customElements.define so every route and plugin view can use it without an import.
// Content renders only when the user holds every listed permission (`*` holds them all):
//  - in Preact/htm templates the children are not even created (an options.vnode hook);
//  - in plain HTML the element shows its children only then (shadow root with or without <slot>).
import { options } from './lib.js';

let held = new Set();
const EVENT = 'svc-permissions-changed';

export function setPermissions(list) {
  held = new Set(list || []);
  document.dispatchEvent(new Event(EVENT));
}

/** True when the user holds every permission of `perms` (an empty list needs none). */
export function hasAll(perms) {
  const list = parsePermissions(perms);
  if (held.has('*')) return true;
  return list.every((p) => held.has(p));
}

/** A permissions value: an array, a JSON array string, or a comma-separated string. */
export function parsePermissions(v) {
  if (Array.isArray(v)) return v.map(String);
  if (typeof v !== 'string' || !v.trim()) return [];
  try {
    const parsed = JSON.parse(v);
    return Array.isArray(parsed) ? parsed.map(String) : [String(parsed)];
  } catch {
    return v.split(',').map((s) => s.trim()).filter(Boolean);
  }
}

class SvcPermission extends HTMLElement {
  static get observedAttributes() {
    return ['permissions'];
  }
  constructor() {
    super();
    this.update = this.update.bind(this);
  }
  get permissions() {
    return parsePermissions(this.getAttribute('permissions'));
  }
  set permissions(v) {
    this.setAttribute('permissions', JSON.stringify(parsePermissions(v)));
  }
  connectedCallback() {
    document.addEventListener(EVENT, this.update);
    this.update();
  }
  disconnectedCallback() {
    document.removeEventListener(EVENT, this.update);
  }
  attributeChangedCallback() {
    this.update();
  }
  update() {
    const root = this.shadowRoot || this.attachShadow({ mode: 'open' });
    const allowed = hasAll(this.getAttribute('permissions'));
    root.replaceChildren(...(allowed ? [document.createElement('slot')] : []));
    this.toggleAttribute('data-denied', !allowed);
  }
}

if (!customElements.get('svc-permission')) customElements.define('svc-permission', SvcPermission);

const previous = options.vnode;
options.vnode = (vnode) => {
  if (vnode.type === 'svc-permission' && vnode.props && !hasAll(vnode.props.permissions)) vnode.props.children = null;
  if (previous) previous(vnode);
};
