/**
 * The browser page: the contacts tagged "customer", kept up to date. Bundle it with any bundler
 * (e.g. `npx vite examples/web-client`), with the gateway allowing the page's origin
 * (SVC_CORS_ORIGINS) and a personal access token in sessionStorage under `svc.token`.
 */
import { createCrmClient } from './client.js';
import { contactsByTag, watchContacts, type Contact } from './crm.js';

const TAG = 'customer';
const list = document.querySelector('#contacts') as HTMLUListElement;
const token = sessionStorage.getItem('svc.token') ?? '';
const { apollo } = createCrmClient({ url: location.origin, token });

const shown = new Map<string, Contact>();
function render(): void {
  list.replaceChildren(
    ...[...shown.values()].map((c) => {
      const li = document.createElement('li');
      li.textContent = `${c.spec?.email ?? ''} (${c.spec?.company ?? 'no company'})`;
      return li;
    }),
  );
}

const { contacts, resourceVersion } = await contactsByTag(apollo, TAG);
for (const c of contacts) shown.set(c.metadata!.name, c);
render();
watchContacts(apollo, TAG, resourceVersion, (event) => {
  const name = event.object?.metadata?.name;
  if (!name || !event.object) return;
  if (event.type === 'DELETED') shown.delete(name);
  else if (event.type !== 'BOOKMARK') shown.set(name, { ...event.object, spec: { ...event.object.spec, tags: [] } } as Contact);
  render();
});
