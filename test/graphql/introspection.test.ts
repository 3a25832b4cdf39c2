/**
 * GraphQL refusals (issue 35 findings 8 and 9; docs/API.md §5), on both stores:
 *  - introspection follows the rule of discovery: an anonymous caller without a rule granting
 *    `get` on `/apis` gets UNAUTHENTICATED (HTTP 401), over HTTP and graphql-ws; signed-in users
 *    introspect; a rule aggregated into `anonymous` opens it; `__typename` stays open;
 *  - every limit refusal (aliases, depth, tokens) is HTTP 400, whatever the Accept header.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANONYMOUSLY, call, STORES, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { createRole, createUser } from '../helpers/rbac.js';
import { wsClient } from './helpers.js';

const INTROSPECTIONS = [
  '{ __schema { types { name } } }',
  '{ __type(name: "Query") { fields { name } } }',
  '{ me { username } ...F } fragment F on Query { __schema { queryType { name } } }',
  'query { ... on Query { __type(name: "Me") { name } } }',
];

async function until(check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe.each(STORES)('GraphQL refusals (%s)', (kind) => {
  let gw: TestGateway;
  let plain: string;
  beforeAll(async () => {
    gw = await startTestGateway(kind);
    plain = await createUser(gw, 'plain');
  });
  afterAll(async () => {
    await gw?.dispose();
  });

  const post = (query: string, headers: Record<string, string> = {}) => call(gw, 'POST', '/graphql', { query }, headers);

  it('anonymous introspection is UNAUTHENTICATED (401); signed-in callers introspect; __typename stays open', async () => {
    for (const query of INTROSPECTIONS) {
      for (const accept of ['application/json', 'application/graphql-response+json']) {
        const r = await post(query, { ...ANONYMOUSLY, accept });
        expect(r.status, query).toBe(401);
        expect(r.body.data).toBeUndefined();
        expect(r.body.errors.map((e: any) => e.extensions.code)).toEqual(['UNAUTHENTICATED']);
      }
      for (const auth of [{}, { authorization: plain }] as Record<string, string>[]) {
        const r = await post(query, auth);
        expect(r.status, query).toBe(200);
        expect(r.body.errors).toBeUndefined();
      }
    }
    // GET too (GraphiQL may introspect over GET)
    const get = await fetch(`${gw.url}/graphql?query=${encodeURIComponent(INTROSPECTIONS[0]!)}`, { headers: { accept: 'application/json' } });
    expect(get.status).toBe(401);
    const open = await post('{ __typename me { username } }', ANONYMOUSLY);
    expect(open.body).toEqual({ data: { __typename: 'Query', me: { username: 'anonymous' } } });
  });

  it('over graphql-ws too', async () => {
    const client = wsClient(gw);
    try {
      const errors = await new Promise<any>((resolve) => {
        client.subscribe({ query: INTROSPECTIONS[0]! }, { next: (r) => resolve(r.errors), error: resolve, complete: () => undefined });
      });
      expect(errors.map((e: any) => e.extensions.code)).toEqual(['UNAUTHENTICATED']);
      expect(errors[0].extensions.http).toBeUndefined(); // HTTP status and headers stay on HTTP
      const aliases = `{ ${Array.from({ length: 31 }, (_, i) => `a${i}: me { username }`).join(' ')} }`;
      const refused = await new Promise<any>((resolve) => {
        client.subscribe({ query: aliases }, { next: (r) => resolve(r.errors), error: resolve, complete: () => undefined });
      });
      expect(refused.map((e: any) => e.extensions)).toEqual([{ code: 'BAD_REQUEST' }]);
    } finally {
      await client.dispose();
    }
  });

  it('a rule granting anonymous discovery opens introspection', async () => {
    const grant = await createRole(gw, 'public-discovery', [{ nonResourceURLs: ['/apis'], verbs: ['get'] }], {
      labels: { 'rbac.authorization.svc.run/aggregate-to-anonymous': 'true' },
    });
    expect(grant.status).toBe(201);
    try {
      await until(async () => (await post(INTROSPECTIONS[0]!, ANONYMOUSLY)).status === 200);
      expect((await post(INTROSPECTIONS[1]!, ANONYMOUSLY)).body.data.__type.fields.length).toBeGreaterThan(0);
    } finally {
      expect((await call(gw, 'DELETE', '/api/v1alpha1/roles/public-discovery')).status).toBe(200);
    }
    await until(async () => (await post(INTROSPECTIONS[0]!, ANONYMOUSLY)).status === 401);
  });

  it('limit refusals are HTTP 400 BAD_REQUEST whatever the Accept header', async () => {
    let deep = 'metadata { name }';
    for (let i = 0; i < 8; i++) deep = `spec { otherPerson { ${deep} } }`;
    const refused = [
      `{ ${Array.from({ length: 31 }, (_, i) => `a${i}: me { username }`).join(' ')} }`,
      `{ peopleExampleCom_v1alpha1_person(name: "x") { ${deep} } }`,
      `{ ${Array.from({ length: 2100 }, () => '__typename').join(' ')} }`,
    ];
    for (const query of refused) {
      for (const accept of ['application/json', 'application/graphql-response+json', '*/*']) {
        const r = await post(query, { accept });
        expect(r.status, `${accept}: ${query.slice(0, 40)}`).toBe(400);
        expect(r.body.errors.map((e: any) => e.extensions.code)).toEqual(['BAD_REQUEST']);
        expect(r.body.errors[0].extensions.http).toBeUndefined();
      }
    }
  });
});
