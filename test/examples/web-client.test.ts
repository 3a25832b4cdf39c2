/**
 * The example front-end (examples/web-client) typechecks with its own tsconfig (browser lib,
 * bundler resolution) against the documents `npm run codegen` generated, and a mistake in it is
 * caught; then its client code runs against a real gateway on both stores, signed in with a
 * personal access token as a browser would be (Bearer over HTTP, the token sub-protocol on the
 * WebSocket): it walks a connection with a typed `where` and `orderBy` page by page, follows
 * each deal's reference to its contact (Apollo's cache keeps one entry per `id`), and subscribes
 * with the same `where`, references resolved in the events too. With SVC_GRAPHQL_OPERATIONS set to the generated manifest, the client
 * sending hashes works and one sending its own text is refused.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCrmClient, type CrmClient } from '../../examples/web-client/src/client.js';
import { bigDeals, watchBigDeals, type DealEvent } from '../../examples/web-client/src/crm.js';
import { call, startTestGateway, STORES, type TestGateway } from '../helpers/gateway.js';
import { eventually } from '../plugins/fixtures.js';

const run = promisify(execFile);
const root = join(import.meta.dirname, '../..');
const EXAMPLE = join(root, 'examples/web-client');
const MANIFEST = join(EXAMPLE, 'src/gql/persisted-documents.json');
const TOKENS = '/apis/uc.api.security.svc.run/v1alpha1/personalaccesstokens';
const CRM = '/apis/crm.example.net/v1';

describe('examples/web-client typechecks', () => {
  let check: string;
  afterAll(() => rm(check, { recursive: true, force: true }));

  it('tsc passes on the example and catches a field the documents do not select', async () => {
    // The example's own settings, plus one file with a mistake.
    check = await mkdtemp(join(EXAMPLE, '.check-'));
    await writeFile(join(check, 'bad.ts'), "import type { Deal } from '../src/crm.js';\nexport const phone = (d: Deal) => d.spec?.contactPerson?.spec?.phone;\n");
    await writeFile(join(check, 'tsconfig.json'), JSON.stringify({ extends: '../tsconfig.json', include: ['../src'], files: ['bad.ts'] }));
    const errors = await run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '--pretty', 'false', '-p', check], { cwd: check })
      .then(() => [] as string[])
      .catch((e: { stdout: string }) => e.stdout.split('\n').filter((l) => /error TS/.test(l)));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/bad\.ts.*Property 'phone' does not exist/);
  }, 120_000);
});

/** Three contacts and five deals, one of them referring to a contact that does not exist. */
async function seed(gw: TestGateway): Promise<void> {
  for (const p of ['p1', 'p2', 'p3']) {
    expect((await call(gw, 'POST', `${CRM}/people`, { metadata: { name: p }, spec: { email: `${p}@example.net`, company: `Co ${p}` } })).status).toBe(201);
  }
  const deals: [string, number, string][] = [
    ['d1', 50, 'p1'],
    ['d2', 150, 'p1'],
    ['d3', 300, 'p2'],
    ['d4', 1000, 'p3'],
    ['d5', 120, 'ghost'],
  ];
  for (const [name, amount, contact] of deals) {
    expect((await call(gw, 'POST', `${CRM}/deals`, { metadata: { name }, spec: { title: `Deal ${name}`, amount, contact } })).status).toBe(201);
  }
}

async function tokenFor(gw: TestGateway): Promise<string> {
  const created = await call(gw, 'POST', TOKENS, { spec: { displayName: 'web client' } });
  expect(created.status).toBe(201);
  return created.body.token;
}

const summary = (d: { metadata?: { name: string } | null; spec?: { amount?: number | null; contactPerson?: { spec?: { email?: string | null } | null } | null } | null }) => [
  d.metadata?.name,
  d.spec?.amount,
  d.spec?.contactPerson?.spec?.email ?? null,
];

for (const kind of STORES) {
  describe(`examples/web-client against a gateway (${kind})`, () => {
    let gw: TestGateway;
    let client: CrmClient;

    beforeAll(async () => {
      gw = await startTestGateway(kind);
      await seed(gw);
      client = createCrmClient({ url: gw.url, token: await tokenFor(gw), webSocketImpl: WebSocket });
    });
    afterAll(async () => {
      await client?.close();
      await gw?.dispose();
    });

    it('walks the connection with where and orderBy, following each deal to its contact; the cache keys objects by id', async () => {
      const { deals, totalCount } = await bigDeals(client.apollo, 100, 2);
      expect(totalCount).toBe(4);
      expect(deals.map(summary)).toEqual([
        ['d4', 1000, 'p3@example.net'],
        ['d3', 300, 'p2@example.net'],
        ['d2', 150, 'p1@example.net'],
        ['d5', 120, null], // the contact does not exist
      ]);
      const keys = Object.keys(client.apollo.cache.extract() as Record<string, unknown>);
      expect(keys.filter((k) => k.startsWith('CrmExampleNetV1Deal:'))).toHaveLength(4);
      expect(keys.filter((k) => k.startsWith('CrmExampleNetV1Person:'))).toHaveLength(3);
    });

    it('subscribes with the same where from the first page on: what enters, changes or leaves it, with its contact', async () => {
      const { resourceVersion } = await bigDeals(client.apollo, 100, 2);
      const events: DealEvent[] = [];
      const errors: Error[] = [];
      const stop = watchBigDeals(client.apollo, 100, resourceVersion, (e) => events.push(e), (e) => errors.push(e));
      const patch = (name: string, spec: object) => call(gw, 'PATCH', `${CRM}/deals/${name}`, { spec }, { 'content-type': 'application/merge-patch+json' });
      try {
        // Written while the subscription may still be opening: it resumes from the page's
        // resourceVersion, so it misses none of them.
        await call(gw, 'POST', `${CRM}/deals`, { metadata: { name: 'd6' }, spec: { title: 'Deal d6', amount: 500, contact: 'p2' } });
        await call(gw, 'POST', `${CRM}/deals`, { metadata: { name: 'd7' }, spec: { title: 'Deal d7', amount: 10, contact: 'p1' } }); // below
        await patch('d3', { amount: 350 });
        await patch('d1', { amount: 200 }); // rises past the bound
        await patch('d2', { amount: 90 }); // falls below it
        await call(gw, 'DELETE', `${CRM}/deals/d4`);
        await eventually(async () => expect(events.length).toBeGreaterThanOrEqual(5));
        await new Promise((r) => setTimeout(r, 200)); // nothing more comes
        expect(events.map((e) => [e.type, ...summary(e.object ?? {})])).toEqual([
          ['ADDED', 'd6', 500, 'p2@example.net'],
          ['MODIFIED', 'd3', 350, 'p2@example.net'],
          ['ADDED', 'd1', 200, 'p1@example.net'],
          ['DELETED', 'd2', 90, 'p1@example.net'],
          ['DELETED', 'd4', 1000, 'p3@example.net'],
        ]);
        expect(errors).toEqual([]);
      } finally {
        stop();
      }
    }, 60_000);
  });

  describe(`examples/web-client with SVC_GRAPHQL_OPERATIONS = its manifest (${kind})`, () => {
    let gw: TestGateway;
    let token: string;
    const clients: CrmClient[] = [];
    const client = (persisted: boolean) => {
      const c = createCrmClient({ url: gw.url, token, persisted, webSocketImpl: WebSocket });
      clients.push(c);
      return c;
    };

    beforeAll(async () => {
      gw = await startTestGateway(kind, { config: { graphqlOperations: MANIFEST } });
      await seed(gw);
      token = await tokenFor(gw);
    });
    afterAll(async () => {
      for (const c of clients) await c.close();
      await gw?.dispose();
    });

    it('the client sending hashes queries and subscribes; the same documents sent as text are refused', async () => {
      const persisted = client(true);
      const { deals, resourceVersion } = await bigDeals(persisted.apollo, 100, 3);
      expect(deals.map(summary)[0]).toEqual(['d4', 1000, 'p3@example.net']);
      const events: DealEvent[] = [];
      const stop = watchBigDeals(persisted.apollo, 100, resourceVersion, (e) => events.push(e));
      await call(gw, 'POST', `${CRM}/deals`, { metadata: { name: 'd8' }, spec: { title: 'Deal d8', amount: 800, contact: 'p1' } });
      await eventually(async () => expect(events.map((e) => e.object?.metadata?.name)).toEqual(['d8']));
      stop();

      await expect(bigDeals(client(false).apollo, 100)).rejects.toThrow(/allow-list of persisted operations|Only the persisted operations/);
    }, 60_000);
  });
}
