/**
 * The browser page: the deals of 1000 or more, largest first, each with its contact, kept up to
 * date. Bundle it with any bundler (e.g. `npx vite examples/web-client`), with the gateway
 * allowing the page's origin (SVC_CORS_ORIGINS), its URL in `?gateway=` (default
 * http://127.0.0.1:8090) and a personal access token in sessionStorage under `svc.token`.
 */
import { createCrmClient } from './client.js';
import { bigDeals, watchBigDeals, type Deal } from './crm.js';

const MIN_AMOUNT = 1000;
const list = document.querySelector('#deals') as HTMLUListElement;
const token = sessionStorage.getItem('svc.token') ?? '';
const gateway = new URLSearchParams(location.search).get('gateway') ?? 'http://127.0.0.1:8090';
const { apollo } = createCrmClient({ url: gateway, token });

type Shown = Pick<Deal, 'metadata'> & { spec?: { title?: string | null; amount?: number | null; contactPerson?: { spec?: { email?: string | null } | null } | null } | null };
const shown = new Map<string, Shown>();

function render(): void {
  const rows = [...shown.values()].sort((a, b) => (b.spec?.amount ?? 0) - (a.spec?.amount ?? 0));
  list.replaceChildren(
    ...rows.map((d) => {
      const li = document.createElement('li');
      li.textContent = `${d.spec?.title ?? d.metadata?.name}: ${d.spec?.amount ?? '?'} (${d.spec?.contactPerson?.spec?.email ?? 'no contact'})`;
      return li;
    }),
  );
}

const { deals, resourceVersion } = await bigDeals(apollo, MIN_AMOUNT);
for (const d of deals) shown.set(d.metadata!.name, d);
render();
watchBigDeals(apollo, MIN_AMOUNT, resourceVersion, (event) => {
  const deal = event.object;
  if (!deal?.metadata) return; // a BOOKMARK
  if (event.type === 'DELETED') shown.delete(deal.metadata.name);
  else shown.set(deal.metadata.name, deal);
  render();
});
