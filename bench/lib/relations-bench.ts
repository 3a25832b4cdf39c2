/**
 * Relation cost (issue 32 target: ≥ 0.7×): on the embedded store, a GraphQL connection page of
 * 40 crm deals (plugins/crm) with each deal's contact resolved through its x-svc-ref
 * (`spec.contactPerson`, loaded in one batch per page) ÷ the same page without it, throughput.
 * One gateway child holds CONTACTS crm people and DEALS deals (deal i refers to person
 * i % CONTACTS); the pages rotate over windows of the amount index (`where: { spec: { amount:
 * { gte } } }`) so the 40 contacts differ between requests. Before timing, every page is checked
 * to hold 40 deals whose resolved contact is the one its spec.contact names. Rounds alternate
 * which scenario goes first; the median of per-round ratios is reported.
 */
import { BenchChild } from './children.js';
import type { GatewayChildConfig } from './gateway-child.js';
import { alternatingRounds, HttpClient, median, percentile, runLoad, type RequestSpec } from './load.js';

const PAGE = 40;
const DEALS = 2000;
const CONTACTS = 500;
/** Windows the pages start at: amount ≥ 10·k·PAGE, k < WINDOWS (each page is full). */
const WINDOWS = DEALS / PAGE - 1;
const FIELD = 'crmExampleNet_v1_dealsConnection';
const NODE = 'metadata { name } spec { title amount contact';
const query = (withRef: boolean) =>
  `query D($min: Float!) { ${FIELD}(first: ${PAGE}, where: { spec: { amount: { gte: $min } } }, orderBy: [SPEC_AMOUNT_ASC]) { ` +
  `edges { cursor node { ${NODE}${withRef ? ' contactPerson { metadata { name } spec { email company } }' : ''} } } } pageInfo { hasNextPage endCursor } } }`;
const QUERIES = { with: query(true), without: query(false) };
const body = (q: string, i: number) => JSON.stringify({ query: q, variables: { min: 10 * PAGE * (i % WINDOWS) } });
const personName = (j: number) => `contact-${String(j).padStart(5, '0')}`;

export interface RelationsBenchOptions {
  dataDir: string;
  pluginsDir: string;
  adminPassword: string;
  requests: number;
  concurrency: number;
  rounds: number;
  warmup: number;
}

export interface RelationsBenchResult {
  ratio: number;
  rps: { with: number; without: number };
  p50: { with: number; without: number };
}

export async function benchRelations(o: RelationsBenchOptions): Promise<RelationsBenchResult> {
  const cfg: GatewayChildConfig = { dataDir: o.dataDir, pluginsDir: o.pluginsDir, adminPassword: o.adminPassword };
  const child = await BenchChild.start('gateway (relations)', 'gateway-child.ts', cfg);
  const headers = { authorization: `Basic ${Buffer.from(`admin:${o.adminPassword}`).toString('base64')}` };
  const client = new HttpClient(child.url, Math.max(16, o.concurrency));
  try {
    const seed = async (specs: RequestSpec[]) => {
      const r = await runLoad(client, (i) => specs[i]!, { requests: specs.length, concurrency: 16, headers, okStatus: 201 });
      if (r.errors) throw new Error(`seeding: ${r.errors} failed (${r.firstError})`);
    };
    await seed(
      Array.from({ length: CONTACTS }, (_, j) => ({
        method: 'POST' as const,
        path: '/apis/crm.example.net/v1/people',
        body: JSON.stringify({ metadata: { name: personName(j) }, spec: { email: `c${j}@example.net`, company: `Company ${j % 50}` } }),
      })),
    );
    await seed(
      Array.from({ length: DEALS }, (_, i) => ({
        method: 'POST' as const,
        path: '/apis/crm.example.net/v1/deals',
        body: JSON.stringify({ metadata: { name: `deal-${String(i).padStart(6, '0')}` }, spec: { title: `Deal ${i}`, amount: 10 * i, contact: personName(i % CONTACTS) } }),
      })),
    );
    console.log(`  seeded ${CONTACTS} crm people and ${DEALS} deals`);
    // Check: every window's page is full, and each resolved contact is the one spec.contact names.
    for (let k = 0; k < WINDOWS; k++) {
      for (const [side, q] of Object.entries(QUERIES)) {
        const b = (await client.json({ method: 'POST', path: '/graphql', body: body(q, k) }, headers)) as {
          data?: Record<string, { edges: { node: { spec: { contact: string; contactPerson?: { metadata: { name: string } } | null } } }[] }>;
          errors?: unknown;
        };
        const edges = b.data?.[FIELD]?.edges;
        if (b.errors || !edges || edges.length !== PAGE) throw new Error(`relations (${side}): page ${k}: ${JSON.stringify(b).slice(0, 300)}`);
        if (side === 'with' && edges.some((e) => e.node.spec.contactPerson?.metadata.name !== e.node.spec.contact)) {
          throw new Error(`relations: page ${k} resolved a contact that is not the one its deal names`);
        }
      }
    }
    console.log(`  every page holds ${PAGE} deals; with the relation, each resolved contact is the one its deal names`);
    const run = async (side: 'with' | 'without', requests: number) => {
      const r = await runLoad(client, (i) => ({ method: 'POST', path: '/graphql', body: body(QUERIES[side], i) }), { requests, concurrency: o.concurrency, headers });
      if (r.errors) throw new Error(`relations (${side}): ${r.errors} errors, first: ${r.firstError}`);
      return r;
    };
    await run('with', o.warmup);
    await run('without', o.warmup);
    const { runs, ratios } = await alternatingRounds(o.rounds, ['with', 'without'], async (side, round) => {
      const r = await run(side, o.requests);
      console.log(`  round ${round + 1} ${side.padEnd(7)} ${r.rps.toFixed(0)} req/s  p50 ${percentile(r.latencies, 50).toFixed(1)} ms`);
      return r;
    });
    const p50 = (side: 'with' | 'without') => median(runs[side].map((r) => percentile(r.latencies, 50)));
    return {
      ratio: median(ratios),
      rps: { with: median(runs.with.map((r) => r.rps)), without: median(runs.without.map((r) => r.rps)) },
      p50: { with: p50('with'), without: p50('without') },
    };
  } finally {
    client.close();
    await child.stop();
  }
}
