/**
 * Reverse connections (docs/API.md §13, x-svc-ref `reverse`), both stores, on the example crm
 * plugin: each Person has `deals`, a connection of the Deals whose spec.contact names it, with
 * the arguments of a connection (first/after/last/before, where, orderBy), under the `list` rule
 * of deals (denied: null with FORBIDDEN at the field's path, the rest returned); bad arguments and
 * a cursor of another person's `deals` get BAD_REQUEST; the cost limit multiplies by both pages.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, call, startTestGateway, STORES, type TestGateway } from '../helpers/gateway.js';
import { bind, createRole, createUser } from '../helpers/rbac.js';
import { gql as post } from './helpers.js';

const gql = (gw: TestGateway, query: string, variables?: Record<string, unknown>, headers: Record<string, string> = {}) =>
  post(gw, query, variables, { authorization: adminAuth, ...headers });

const PEOPLE = '/apis/crm.example.net/v1/people';
const DEALS = '/apis/crm.example.net/v1/deals';
const PERSON = `query($name: String!, $first: Int, $after: String, $last: Int, $before: String, $where: CrmExampleNetV1DealWhere, $orderBy: [CrmExampleNetV1DealOrder!]) {
  p: crmExampleNet_v1_person(name: $name) {
    metadata { name }
    deals(first: $first, after: $after, last: $last, before: $before, where: $where, orderBy: $orderBy) {
      totalCount
      edges { cursor node { metadata { name } spec { amount contact } } }
      pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
    }
  }
}`;

/** Person `rN-i` has i deals `rN-i-j` (amount 10·j); one deal names nobody. */
const person = (i: number) => `rv-${i}`;
const dealsOf = (i: number) => Array.from({ length: i }, (_, j) => `rv-${i}-${j}`);

describe.each(STORES)('GraphQL reverse connections (%s)', (kind) => {
  let gw: TestGateway;
  const names = (c: any): string[] => c.edges.map((e: any) => e.node.metadata.name);
  const deals = async (vars: Record<string, unknown>) => {
    const r = await gql(gw, PERSON, vars);
    expect(r.body.errors, JSON.stringify(r.body.errors)).toBeUndefined();
    return r.body.data.p.deals;
  };

  beforeAll(async () => {
    gw = await startTestGateway(kind);
    for (let i = 0; i < 5; i++) {
      expect((await call(gw, 'POST', PEOPLE, { metadata: { name: person(i) }, spec: { email: `rv${i}@example.net` } }, { authorization: adminAuth })).status).toBe(201);
      for (const [j, name] of dealsOf(i).entries()) {
        const d = await call(gw, 'POST', DEALS, { metadata: { name }, spec: { title: name, amount: 10 * j, contact: person(i) } }, { authorization: adminAuth });
        expect(d.status, JSON.stringify(d.body)).toBe(201);
      }
    }
    expect((await call(gw, 'POST', DEALS, { metadata: { name: 'rv-orphan' }, spec: { title: 'x', contact: 'nobody' } }, { authorization: adminAuth })).status).toBe(201);
  }, 120_000);
  afterAll(() => gw?.dispose());

  it('lists the deals naming each person, on every object of a connection page', async () => {
    const r = await gql(
      gw,
      `{ c: crmExampleNet_v1_peopleConnection(first: 10, where: { metadata: { name: { in: ["rv-0", "rv-1", "rv-2", "rv-3", "rv-4"] } } }, orderBy: [METADATA_NAME_ASC]) {
        edges { node { metadata { name } deals(orderBy: [METADATA_NAME_ASC]) { totalCount edges { node { metadata { name } spec { contactPerson { metadata { name } } } } } } } }
      } }`,
    );
    expect(r.body.errors, JSON.stringify(r.body.errors)).toBeUndefined();
    const rows = r.body.data.c.edges.map((e: any) => [e.node.metadata.name, names(e.node.deals), e.node.deals.totalCount]);
    expect(rows).toEqual([0, 1, 2, 3, 4].map((i) => [person(i), dealsOf(i), i]));
    // The forward reference of each listed deal leads back to the person.
    const p4 = r.body.data.c.edges[4].node.deals.edges.map((e: any) => e.node.spec.contactPerson.metadata.name);
    expect(new Set(p4)).toEqual(new Set([person(4)]));
  });

  it('takes the arguments of a connection: first/after, last/before, where and orderBy', async () => {
    const first = await deals({ name: 'rv-4', first: 2, orderBy: ['SPEC_AMOUNT_DESC'] });
    expect(names(first)).toEqual(['rv-4-3', 'rv-4-2']);
    expect(first.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: false });
    expect(first.totalCount).toBe(4);
    const rest = await deals({ name: 'rv-4', first: 5, after: first.pageInfo.endCursor, orderBy: ['SPEC_AMOUNT_DESC'] });
    expect(names(rest)).toEqual(['rv-4-1', 'rv-4-0']);
    expect(rest.pageInfo).toMatchObject({ hasNextPage: false, hasPreviousPage: true });
    const back = await deals({ name: 'rv-4', last: 1, before: rest.pageInfo.startCursor, orderBy: ['SPEC_AMOUNT_DESC'] });
    expect(names(back)).toEqual(['rv-4-2']);
    // where ANDs with the reference: amounts ≥ 20 of rv-4 only (rv-3 has some too).
    const where = await deals({ name: 'rv-4', where: { spec: { amount: { gte: 20 } } }, orderBy: ['SPEC_AMOUNT_ASC'] });
    expect(names(where)).toEqual(['rv-4-2', 'rv-4-3']);
    expect(where.totalCount).toBe(2);
    expect(names(await deals({ name: 'rv-0' }))).toEqual([]);
  });

  it('bad arguments and a cursor of another person get BAD_REQUEST at the field, with no stack', async () => {
    const cursor = (await deals({ name: 'rv-4', first: 1 })).pageInfo.endCursor;
    for (const vars of [
      { first: 0 },
      { first: 1001 },
      { first: 1, last: 1 },
      { first: 1, before: cursor },
      { after: 'not-a-cursor' },
      { first: 1, after: cursor, name: 'rv-3' }, // another person's deals: another query
      { first: 1, after: cursor, where: { spec: { amount: { gte: 1 } } } },
      { where: { metadata: { labels: { matchLabels: { 'bad key!': 'x' } } } } },
    ]) {
      const r = await gql(gw, PERSON, { name: 'rv-4', ...vars });
      expect(r.body.errors?.map((e) => [e.extensions?.code, e.path?.join('.')]), JSON.stringify(vars)).toEqual([['BAD_REQUEST', 'p.deals']]);
      expect(r.body.data.p.metadata.name).toBe(vars.name ?? 'rv-4');
      expect(JSON.stringify(r.body)).not.toMatch(/\bat .*\.(ts|js):\d+/);
    }
    // An unindexed path is not in the input type.
    const r = await gql(gw, PERSON, { name: 'rv-4', where: { spec: { title: { eq: 'x' } } } });
    expect(r.status).toBe(400);
    expect(r.body.data ?? null).toBeNull();
  });

  it('the cost limit multiplies by the outer page and the reverse page', async () => {
    const q = (n: number) => `{ crmExampleNet_v1_peopleConnection(first: ${n}) { edges { node { deals(first: ${n}) { edges { node { metadata { name } } } } } } } }`;
    const over = await gql(gw, q(500));
    expect(over.body.errors?.map((e) => e.extensions?.code)).toEqual(['BAD_REQUEST']);
    expect(over.body.errors![0]!.message).toMatch(/costs \d+, more than the limit of 50000/);
    const under = await gql(gw, q(10));
    expect(under.body.errors).toBeUndefined();
  });

  it('the OpenAPI document keeps x-svc-ref with reverse and says so in the description', async () => {
    const doc = await call(gw, 'GET', '/openapi/v3/apis/crm.example.net/v1', undefined, { authorization: adminAuth });
    expect(doc.status).toBe(200);
    const found: any[] = [];
    const walk = (v: unknown): void => {
      if (Array.isArray(v)) v.forEach(walk);
      else if (v && typeof v === 'object') {
        if ((v as any)['x-svc-ref']?.reverse === 'deals') found.push(v);
        Object.values(v).forEach(walk);
      }
    };
    walk(doc.body);
    expect(found.length).toBeGreaterThan(0);
    for (const p of found) expect(p.description).toMatch(/connection `deals`/);
  });

  it('is under the list rule of deals: without it, null with FORBIDDEN at its path, the rest returned', async () => {
    const auth = await createUser(gw, `rv-reader-${kind}`);
    expect((await createRole(gw, 'rv-reader', [{ apiGroups: ['crm.example.net'], resources: ['people'], verbs: ['get', 'list'] }])).status).toBe(201);
    expect((await bind(gw, `rv-reader-${kind}`, 'rv-reader')).status).toBe(201);
    const r = await gql(
      gw,
      `{ c: crmExampleNet_v1_peopleConnection(first: 2, where: { metadata: { name: { in: ["rv-1", "rv-2"] } } }, orderBy: [METADATA_NAME_ASC]) {
        edges { node { metadata { name } deals { edges { node { metadata { name } } } } } } } }`,
      undefined,
      { authorization: auth },
    );
    expect(r.body.data.c.edges).toEqual([
      { node: { metadata: { name: 'rv-1' }, deals: null } },
      { node: { metadata: { name: 'rv-2' }, deals: null } },
    ]);
    expect(r.body.errors!.map((e) => [e.extensions?.code, e.path!.join('.')]).sort()).toEqual([
      ['FORBIDDEN', 'c.edges.0.node.deals'],
      ['FORBIDDEN', 'c.edges.1.node.deals'],
    ]);
    // With list on deals, the same query returns them.
    expect((await createRole(gw, 'rv-deals', [{ apiGroups: ['crm.example.net'], resources: ['deals'], verbs: ['list'] }])).status).toBe(201);
    expect((await bind(gw, `rv-reader-${kind}`, 'rv-deals')).status).toBe(201);
    const allowed = await gql(gw, PERSON, { name: 'rv-2' }, { authorization: auth });
    expect(allowed.body.errors).toBeUndefined();
    expect(names(allowed.body.data.p.deals).sort()).toEqual(dealsOf(2));
  });
});
