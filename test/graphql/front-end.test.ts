/**
 * GraphQL for front-ends (docs/API.md §13): object identity (Node, node, nodes), references
 * through x-svc-ref loaded in batches, and the cost limit. On both stores, against the example
 * crm plugin (a Deal refers to Person objects: spec.contact → contactPerson, spec.watchers →
 * watcherPeople).
 */
import { InMemoryCache } from '@apollo/client/cache';
import { parse } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, call, startTestGateway, STORES, type TestGateway } from '../helpers/gateway.js';
import { bind, createRole, createUser } from '../helpers/rbac.js';
import { CommandLog, describeCommands, modelCollections } from '../helpers/commands.js';
import { codes, gql as post, take, wsClient } from './helpers.js';

/** POST /graphql as the administrator unless `headers` says otherwise. */
const gql = (gw: TestGateway, query: string, variables?: Record<string, unknown>, headers: Record<string, string> = {}) =>
  post(gw, query, variables, { authorization: adminAuth, ...headers });

const PEOPLE = '/apis/crm.example.net/v1/people';
const DEALS = '/apis/crm.example.net/v1/deals';
const N = 40;
const pad = (i: number) => String(i).padStart(2, '0');
const id = (kind: string, name: string) => Buffer.from(`crm.example.net/v1/${kind}/${name}`).toString('base64url');

/** The number of store operations the gateway has run so far (svc_store_operation_duration_seconds). */
async function storeOperations(gw: TestGateway): Promise<number> {
  const text = (await call(gw, 'GET', '/metrics')).body as string;
  let total = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('svc_store_operation_duration_seconds_count')) total += Number(line.split(' ').pop());
  }
  return total;
}

/** Store operations one query costs (the /metrics read itself is not a store operation). */
async function opsOf(gw: TestGateway, query: string, auth?: string) {
  const before = await storeOperations(gw);
  const r = await gql(gw, query, undefined, auth ? { authorization: auth } : {});
  return { ops: (await storeOperations(gw)) - before, r };
}

describe.each(STORES)('GraphQL for front-ends (%s)', (kind) => {
  let gw: TestGateway;
  const commands = new CommandLog();
  beforeAll(async () => {
    gw = await startTestGateway(kind, { onMongoCommand: commands.listener });
    for (let i = 0; i < N; i++) {
      const p = await call(gw, 'POST', PEOPLE, { metadata: { name: `p${pad(i)}` }, spec: { email: `p${i}@example.net` } });
      expect(p.status, JSON.stringify(p.body)).toBe(201);
    }
    for (let i = 0; i < N; i++) {
      const d = await call(gw, 'POST', DEALS, {
        metadata: { name: `d${pad(i)}` },
        spec: { title: `deal ${i}`, amount: i, contact: `p${pad(i)}`, watchers: [`p${pad((i + 1) % N)}`, 'nobody', `p${pad(i)}`] },
      });
      expect(d.status, JSON.stringify(d.body)).toBe(201);
    }
    const missing = await call(gw, 'POST', DEALS, { metadata: { name: 'z-orphan' }, spec: { title: 'orphan', contact: 'nobody' } });
    expect(missing.status).toBe(201);
  }, 120_000);
  afterAll(() => gw?.dispose());

  describe('Node', () => {
    it('every model type has an id unique across models; node(id) and nodes(ids) fetch by it', async () => {
      const r = await gql(gw, `{ crmExampleNet_v1_deal(name: "d03") { id spec { contactPerson { id } } } }`);
      expect(r.body.errors).toBeUndefined();
      const deal = r.body.data.crmExampleNet_v1_deal;
      expect(deal.id).toBe(id('Deal', 'd03'));
      expect(deal.spec.contactPerson.id).toBe(id('Person', 'p03'));
      // A Person of the people plugin with the same name has another id.
      const other = await call(gw, 'POST', '/apis/people.example.com/v1alpha1/persons', { metadata: { name: 'p03' }, spec: { name: 'P' } });
      expect(other.status).toBe(201);
      const both = await gql(
        gw,
        `query($ids: [ID!]!) { nodes(ids: $ids) { __typename id ... on CrmExampleNetV1Person { spec { email } } ... on PeopleExampleComV1alpha1Person { spec { name } } } }`,
        { ids: [id('Person', 'p03'), Buffer.from('people.example.com/v1alpha1/Person/p03').toString('base64url'), id('Person', 'gone'), id('Nothing', 'x')] },
      );
      expect(both.body.errors).toBeUndefined();
      expect(both.body.data.nodes).toEqual([
        { __typename: 'CrmExampleNetV1Person', id: id('Person', 'p03'), spec: { email: 'p3@example.net' } },
        { __typename: 'PeopleExampleComV1alpha1Person', id: Buffer.from('people.example.com/v1alpha1/Person/p03').toString('base64url'), spec: { name: 'P' } },
        null,
        null,
      ]);
      const one = await gql(gw, `query($id: ID!) { node(id: $id) { id ... on CrmExampleNetV1Deal { spec { title } } } }`, { id: deal.id });
      expect(one.body.data.node).toEqual({ id: deal.id, spec: { title: 'deal 3' } });
    });

    it("Apollo Client's InMemoryCache normalises by id unchanged: two queries share one entry, read back by id", async () => {
      const cache = new InMemoryCache({ possibleTypes: { Node: ['CrmExampleNetV1Person', 'CrmExampleNetV1Deal'] } });
      const DEAL = parse(`query Deal { crmExampleNet_v1_deal(name: "d07") { __typename id spec { __typename title contactPerson { __typename id spec { __typename email } } } } }`);
      const NODE = parse(`query Node($id: ID!) { node(id: $id) { __typename id ... on CrmExampleNetV1Person { spec { __typename email } } } }`);
      const deal = await gql(gw, `query Deal { crmExampleNet_v1_deal(name: "d07") { __typename id spec { __typename title contactPerson { __typename id spec { __typename email } } } } }`);
      cache.writeQuery({ query: DEAL, data: deal.body.data });
      const personId = deal.body.data.crmExampleNet_v1_deal.spec.contactPerson.id;
      const key = cache.identify({ __typename: 'CrmExampleNetV1Person', id: personId })!;
      expect(key).toBe(`CrmExampleNetV1Person:${personId}`);
      expect(cache.readFragment({ id: key, fragment: parse(`fragment P on CrmExampleNetV1Person { spec { email } }`) })).toEqual({
        __typename: 'CrmExampleNetV1Person',
        spec: { __typename: 'CrmExampleNetV1PersonSpec', email: 'p7@example.net' },
      });
      // The person changes; reading it again through node(id) updates the entry the deal's query reads.
      expect((await call(gw, 'PATCH', `${PEOPLE}/p07`, { spec: { email: 'new7@example.net' } }, { 'content-type': 'application/merge-patch+json' })).status).toBe(200);
      const node = await gql(gw, `query Node($id: ID!) { node(id: $id) { __typename id ... on CrmExampleNetV1Person { spec { __typename email } } } }`, { id: personId });
      cache.writeQuery({ query: NODE, variables: { id: personId }, data: node.body.data });
      const again = cache.readQuery<any>({ query: DEAL });
      expect(again.crmExampleNet_v1_deal.spec.contactPerson.spec.email).toBe('new7@example.net');
      const persons = Object.keys(cache.extract()).filter((k) => k.startsWith('CrmExampleNetV1Person:'));
      expect(persons).toEqual([key]);
    });

    it('bad ids are BAD_REQUEST before any store call, with no stack', async () => {
      for (const bad of ['', 'not base64!', 'Zm9v' /* "foo" */, Buffer.from('a/b/c').toString('base64url'), 'x'.repeat(2000)]) {
        const { ops, r } = await opsOf(gw, `{ node(id: ${JSON.stringify(bad)}) { id } }`);
        expect(codes(r), bad).toEqual(['BAD_REQUEST']);
        expect(r.body.data).toEqual({ node: null });
        expect(ops).toBe(0);
        expect(JSON.stringify(r.body)).not.toMatch(/\bat .*\.ts:\d+/);
      }
      const many = await gql(gw, `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`, { ids: [id('Deal', 'd01'), 'bad id'] });
      expect(codes(many)).toEqual(['BAD_REQUEST']);
      const before = await storeOperations(gw);
      const tooMany = await gql(gw, `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`, { ids: Array.from({ length: 1001 }, () => id('Deal', 'd01')) });
      expect(codes(tooMany)).toEqual(['BAD_REQUEST']);
      expect(tooMany.body.errors![0]!.message).toContain('at most 1000 ids');
      expect(await storeOperations(gw)).toBe(before);
    });

    it('node honours the get rule with resource names: a denied object is null with its error, the rest is returned', async () => {
      const auth = await createUser(gw, 'node-reader');
      expect((await createRole(gw, 'node-reader', [{ apiGroups: ['crm.example.net'], resources: ['deals'], verbs: ['get'], resourceNames: ['d01'] }])).status).toBe(201);
      expect((await bind(gw, 'node-reader', 'node-reader')).status).toBe(201);
      const r = await gql(gw, `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`, { ids: [id('Deal', 'd01'), id('Deal', 'd02')] }, { authorization: auth });
      expect(r.body.data.nodes).toEqual([{ id: id('Deal', 'd01') }, null]);
      expect(codes(r)).toEqual(['FORBIDDEN']);
      expect(r.body.errors![0]!.path).toEqual(['nodes', 1]);
    });
  });

  describe('references (x-svc-ref)', () => {
    const page = (withRefs: boolean) => `{ crmExampleNet_v1_deals(size: ${N}, sort: "metadata.name") { items { metadata { name } spec { title
      ${withRefs ? 'contactPerson { metadata { name } spec { email } } watcherPeople { metadata { name } }' : ''} } } } }`;

    it('a page of 40 objects with a forward reference costs at most one store operation more than the page alone', async () => {
      const alone = await opsOf(gw, page(false));
      const joined = await opsOf(gw, page(true));
      expect(alone.r.body.errors).toBeUndefined();
      expect(joined.r.body.errors).toBeUndefined();
      const items = joined.r.body.data.crmExampleNet_v1_deals.items;
      expect(items).toHaveLength(N);
      expect(items[5].spec.contactPerson).toEqual({ metadata: { name: 'p05' }, spec: { email: 'p5@example.net' } });
      // A name with no object is left out of a list.
      expect(items[5].spec.watcherPeople).toEqual([{ metadata: { name: 'p06' } }, { metadata: { name: 'p05' } }]);
      expect(joined.ops - alone.ops).toBeLessThanOrEqual(1);
      expect(alone.ops).toBeGreaterThan(0);
      if (kind === 'mongodb') {
        // On the wire: the references (two fields, 80 names) are one find on the people, nothing else.
        const sent = await commands.during(() => gql(gw, page(true)), modelCollections('crm.example.net/v1/people'));
        expect(describeCommands(sent)).toBe('find ext.crm.example.net.v1.people');
      }
    });

    it('a name with no object is null', async () => {
      const r = await gql(gw, `{ crmExampleNet_v1_deal(name: "z-orphan") { spec { contact contactPerson { id } watcherPeople { id } } } }`);
      expect(r.body.errors).toBeUndefined();
      expect(r.body.data.crmExampleNet_v1_deal.spec).toEqual({ contact: 'nobody', contactPerson: null, watcherPeople: null });
    });

    it('a reference the caller may not get is null with FORBIDDEN at its path; the rest of the data is returned', async () => {
      const auth = await createUser(gw, 'deal-reader');
      const rules = [
        { apiGroups: ['crm.example.net'], resources: ['deals'], verbs: ['get', 'list'] },
        { apiGroups: ['crm.example.net'], resources: ['people'], verbs: ['get'], resourceNames: ['p01'] },
      ];
      expect((await createRole(gw, 'deal-reader', rules)).status).toBe(201);
      expect((await bind(gw, 'deal-reader', 'deal-reader')).status).toBe(201);
      const r = await gql(
        gw,
        `{ crmExampleNet_v1_deals(size: 2, page: 1, sort: "metadata.name") { items { metadata { name } spec { contactPerson { metadata { name } } watcherPeople { metadata { name } } } } } }`,
        undefined,
        { authorization: auth },
      );
      const items = r.body.data.crmExampleNet_v1_deals.items;
      expect(items.map((d: any) => d.metadata.name)).toEqual(['d00', 'd01']);
      expect(items[0].spec.contactPerson).toBeNull();
      expect(items[1].spec.contactPerson).toEqual({ metadata: { name: 'p01' } });
      // d00 watches p01 (allowed), nobody and p00; d01 watches p02, nobody and p01. A denied name
      // is denied whether or not its object exists (nothing is read for it).
      expect(items[0].spec.watcherPeople).toEqual([{ metadata: { name: 'p01' } }, null, null]);
      expect(items[1].spec.watcherPeople).toEqual([null, null, { metadata: { name: 'p01' } }]);
      const located = r.body.errors!.map((e) => [e.extensions?.code, e.path!.join('.')]).sort();
      expect(located).toEqual([
        ['FORBIDDEN', 'crmExampleNet_v1_deals.items.0.spec.contactPerson'],
        ['FORBIDDEN', 'crmExampleNet_v1_deals.items.0.spec.watcherPeople.1'],
        ['FORBIDDEN', 'crmExampleNet_v1_deals.items.0.spec.watcherPeople.2'],
        ['FORBIDDEN', 'crmExampleNet_v1_deals.items.1.spec.watcherPeople.0'],
        ['FORBIDDEN', 'crmExampleNet_v1_deals.items.1.spec.watcherPeople.1'],
      ]);
    });

    it('references resolve in subscription events too', async () => {
      const client = wsClient(gw, { authorization: adminAuth });
      try {
        const events = client.iterate({
          query: `subscription { crmExampleNet_v1_watchDeals(fieldSelector: "metadata.name=d10") { type object { metadata { name } spec { contactPerson { metadata { name } } } } } }`,
        });
        const [added] = await take(events, 1);
        expect(added.errors).toBeUndefined();
        expect(added.data.crmExampleNet_v1_watchDeals).toEqual({
          type: 'ADDED',
          object: { metadata: { name: 'd10' }, spec: { contactPerson: { metadata: { name: 'p10' } } } },
        });
        await events.return?.();
      } finally {
        await client.dispose();
      }
    });
  });

  describe('cost limit', () => {
    it('an operation over SVC_GRAPHQL_MAX_COST is BAD_REQUEST (400) giving its cost and the limit, before any store call', async () => {
      const q = `{ crmExampleNet_v1_deals(size: 9000) { items { metadata { name } spec { title amount contact watchers } } } }`;
      const { ops, r } = await opsOf(gw, q);
      expect(r.status).toBe(400);
      expect(codes(r)).toEqual(['BAD_REQUEST']);
      // deals: 1 + 9000 × items (1 + metadata 2 + spec 5 = 8) = 72001.
      expect(r.body.errors![0]!.message).toMatch(/costs 72001, more than the limit of 50000/);
      expect(r.body.data).toBeUndefined();
      expect(ops).toBe(0);
    });

    it('over GET too (400), and over graphql-ws', async () => {
      const q = `{ crmExampleNet_v1_deals(size: 9000) { items { metadata { name } spec { title amount contact watchers } } } }`;
      const res = await fetch(`${gw.url}/graphql?query=${encodeURIComponent(q)}`, { headers: { authorization: adminAuth, accept: 'application/graphql-response+json' } });
      expect(res.status).toBe(400);
      expect((await res.json()).errors[0].message).toMatch(/costs 72001, more than the limit of 50000/);
      const client = wsClient(gw, { authorization: adminAuth });
      try {
        const [result] = await take(client.iterate({ query: q }), 1);
        expect(result.errors[0].extensions.code).toBe('BAD_REQUEST');
        expect(result.data).toBeUndefined();
      } finally {
        await client.dispose();
      }
    });

    it('a list relation multiplies by 20; variables count', async () => {
      const q = `query($size: Int) { crmExampleNet_v1_deals(size: $size) { items { spec { watcherPeople { spec { email company tags } } } } } }`;
      // per deal: items(1) + spec(1) + watcherPeople(1 + 20 * (spec 1 + 3)) = 83 → size 600: 1 + 1 + 600*83 ≈ 49,802 (allowed), 700 refused.
      const ok = await gql(gw, q, { size: 600 });
      expect(ok.body.errors).toBeUndefined();
      const over = await gql(gw, q, { size: 700 });
      expect(codes(over)).toEqual(['BAD_REQUEST']);
    });
  });
});

describe('cost limit set by limits.graphqlMaxCost (SVC_GRAPHQL_MAX_COST)', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway('embedded', { limits: { graphqlMaxCost: 30 } });
  });
  afterAll(() => gw?.dispose());

  it('a mutation over the limit changes nothing; one within it runs', async () => {
    const create = (name: string, selection: string) =>
      gql(gw, `mutation { crmExampleNet_v1_createDeal(object: { metadata: { name: "${name}" }, spec: { title: "t", watchers: ["x"] } }) ${selection} }`);
    // createDeal 1 + spec (1 + watcherPeople (1 + 20 × (metadata 1 + name 1))) = 43
    const over = await create('over', '{ spec { watcherPeople { metadata { name } } } }');
    expect(over.status).toBe(400);
    expect(over.body.errors![0]!.message).toMatch(/costs 43, more than the limit of 30/);
    expect((await call(gw, 'GET', `${DEALS}/over`)).status).toBe(404);
    const within = await create('within', '{ metadata { name } spec { watcherPeople { id } } }');
    expect(within.body.errors).toBeUndefined();
    expect(within.body.data.crmExampleNet_v1_createDeal).toEqual({ metadata: { name: 'within' }, spec: { watcherPeople: [] } });
  });
});
