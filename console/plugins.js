// The plugins route: each plugin's phase and reason, kept live by a watch; a manager enables or
// disables a plugin (merge patch of spec.enabled).
import { html, useEffect, useState } from './lib.js';
import { api, watch } from './api.js';
import { Alert } from './ui.js';

const PLUGINS = '/apis/plugin.svc.run/v1alpha1/plugins';
const MANAGE = '["system:plugins:manage"]';

export function PluginsPage({ onPluginsChanged }) {
  const [items, setItems] = useState(null);
  const [error, setError] = useState('');
  const [busy, setBusy] = useState('');
  const load = () =>
    api.get(PLUGINS).then(
      (r) => {
        setItems(r.items);
        return r;
      },
      (x) => setError(x.message),
    );
  useEffect(() => {
    let stop = () => {};
    let cancelled = false;
    let timer;
    load().then((r) => {
      if (cancelled || !r) return;
      stop = watch(PLUGINS, { resourceVersion: r.resourceVersion }, () => {
        clearTimeout(timer);
        timer = setTimeout(() => load().then(() => onPluginsChanged && onPluginsChanged()), 50);
      });
    });
    return () => {
      cancelled = true;
      clearTimeout(timer);
      stop();
    };
  }, []);
  const setEnabled = async (name, enabled) => {
    setBusy(name);
    setError('');
    try {
      await api.patch(`${PLUGINS}/${encodeURIComponent(name)}`, { spec: { enabled } });
      await load();
    } catch (x) {
      setError(x.message);
    } finally {
      setBusy('');
    }
  };
  return html`<section class="page" data-page="plugins" aria-labelledby="page-title">
    <header class="page-head"><h1 id="page-title">Plugins</h1></header>
    <${Alert} message=${error} />
    ${!items
      ? html`<p class="muted">Loading…</p>`
      : html`<div class="table" role="table" aria-label="Plugins">
          <div class="tr th" role="row"><span role="columnheader">Plugin</span><span role="columnheader">Version</span>
            <span role="columnheader">Phase</span><span role="columnheader">Reason</span><span role="columnheader"></span></div>
          ${items.map((p) => {
            const name = p.metadata.name;
            const enabled = !p.spec || p.spec.enabled !== false;
            const phase = (p.status && p.status.phase) || 'PENDING';
            return html`<div class="tr" role="row" key=${name} data-object-name=${name}>
              <span role="cell" class="name">${(p.spec && p.spec.displayName) || name} <code class="muted">${name}</code>
                ${p.spec && p.spec.description ? html`<small class="muted block">${p.spec.description}</small>` : null}</span>
              <span role="cell">${(p.status && p.status.version) || (p.spec && p.spec.version) || ''}</span>
              <span role="cell"><span class=${`phase phase-${phase.toLowerCase()}`} data-field="phase">${phase}</span></span>
              <span role="cell" data-field="reason" class="muted">${(p.status && p.status.reason) || ''}</span>
              <span role="cell" class="row-actions">
                <svc-permission permissions=${MANAGE}>
                  ${enabled
                    ? html`<button data-action="disable" disabled=${busy === name} onClick=${() => setEnabled(name, false)}>Disable</button>`
                    : html`<button class="primary" data-action="enable" disabled=${busy === name} onClick=${() => setEnabled(name, true)}>Enable</button>`}
                </svc-permission>
              </span>
            </div>`;
          })}
        </div>`}
  </section>`;
}
