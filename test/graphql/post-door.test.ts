/**
 * The POST door (POST + JSON, src/graphql/node-http.ts) must answer exactly like graphql-yoga's
 * own HTTP handling. GET requests always take yoga's handler, so each query of the table is
 * sent both ways and the answers compared; so are POSTs with `application/json; x=yoga`
 * (a parameter the door leaves to yoga's handler) under several Accept headers. Requests the door hands
 * over (bad variables, wrong credentials) must still get yoga's answers.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, call, startTestGateway, type TestGateway } from '../helpers/gateway.js';

const P = 'peopleExampleCom_v1alpha1';

async function viaGet(gw: TestGateway, query: string, variables?: unknown, headers: Record<string, string> = {}) {
  const url = new URL(`${gw.url}/graphql`);
  url.searchParams.set('query', query);
  if (variables) url.searchParams.set('variables', JSON.stringify(variables));
  const res = await fetch(url, { headers: { accept: 'application/json', authorization: adminAuth, ...headers } });
  return { status: res.status, type: res.headers.get('content-type'), body: await res.json() };
}

async function viaPost(gw: TestGateway, query: string, variables?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${gw.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', authorization: adminAuth, ...headers },
    body: JSON.stringify({ query, variables }),
  });
  return { status: res.status, type: res.headers.get('content-type'), body: await res.json() };
}

describe('GraphQL POST door', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway('embedded');
    await call(gw, 'POST', '/apis/people.example.com/v1alpha1/persons', {
      metadata: { name: 'ada', labels: { 'people.example.com/team': 'math' } },
      spec: { name: 'Ada', age: 36, gender: 'FEMALE' },
    });
  });
  afterAll(() => gw?.dispose());

  const queries: [string, string, unknown?][] = [
    ['get', `{ ${P}_person(name: "ada") { metadata { name version labels } spec { name age gender } } }`],
    ['missing', `{ ${P}_person(name: "nobody") { metadata { name } } }`],
    ['list', `{ ${P}_persons(labelSelector: ["people.example.com/team=math"], sort: ["spec.name,asc"], size: 5) { total page items { metadata { name } } } }`],
    ['bad selector', `{ ${P}_persons(fieldSelector: ["spec.age=3"]) { total } }`],
    ['variables', `query Q($n: String!) { ${P}_person(name: $n) { spec { name } } }`, { n: 'ada' }],
    ['me', '{ me { username roles } }'],
    ['syntax error', '{ me { username '],
    ['validation error', '{ nope }'],
    ['bad variables', `query Q($n: String!) { ${P}_person(name: $n) { spec { name } } }`, { n: 3 }],
    ['too deep', `{ ${P}_person(name: "ada") { spec { otherPerson { spec { otherPerson { spec { otherPerson { spec { otherPerson { spec { otherPerson { spec { otherPerson { spec { otherPerson { spec { name } } } } } } } } } } } } } } } }`],
  ];

  it.each(queries)('%s: POST answers like GET', async (_label, query, variables) => {
    const a = await viaGet(gw, query, variables);
    const b = await viaPost(gw, query, variables);
    expect(b).toEqual(a);
  });

  it('mutations run through the door and report errors with codes', async () => {
    const ok = await viaPost(gw, `mutation { ${P}_createPerson(object: { metadata: { name: "bob" }, spec: { name: "Bob", age: 7 } }) { metadata { name version } } }`);
    expect(ok.status).toBe(200);
    expect(ok.body.data[`${P}_createPerson`]).toEqual({ metadata: { name: 'bob', version: 1 } });
    const dup = await viaPost(gw, `mutation { ${P}_createPerson(object: { metadata: { name: "bob" }, spec: { name: "Bob" } }) { metadata { name } } }`);
    expect(dup.body.errors[0].extensions.code).toBe('CONFLICT');
    const invalid = await viaPost(gw, `mutation { ${P}_createPerson(object: { metadata: { name: "carl" }, spec: { age: 400 } }) { metadata { name } } }`);
    expect(invalid.body.errors[0].extensions.code).toBe('INVALID');
    expect(invalid.body.errors[0].extensions.errors).toEqual([{ field: 'spec.age', message: expect.any(String) }]);
  });

  it('hands wrong credentials to yoga: 401', async () => {
    const bad = `Basic ${Buffer.from('admin:wrong').toString('base64')}`;
    const res = await viaPost(gw, '{ me { username } }', undefined, { authorization: bad });
    expect(res.status).toBe(401);
    expect(res.body.errors[0].extensions.code).toBe('UNAUTHENTICATED');
    const good = await viaPost(gw, '{ me { username } }', undefined, { authorization: adminAuth });
    expect(good.body.data.me.username).toBe('admin');
  });

  // application/json is served by the door; with an unknown parameter, by yoga's handler.
  const postAs = async (contentType: string, body: unknown, accept: string | undefined, auth = adminAuth) => {
    const headers: Record<string, string> = { 'content-type': contentType, authorization: auth };
    if (accept !== undefined) headers.accept = accept;
    const res = await fetch(`${gw.url}/graphql`, { method: 'POST', headers, body: JSON.stringify(body) });
    return { status: res.status, type: res.headers.get('content-type'), body: await res.text() };
  };
  const accepts = [
    undefined,
    'application/json',
    'application/graphql-response+json',
    '*/*',
    'application/*',
    'application/graphql-response+json, application/json',
    'application/json, application/graphql-response+json',
    'text/event-stream, application/json',
  ];
  const bodies: [string, unknown][] = [
    ['ok', { query: `{ ${P}_person(name: "ada") { spec { name } } }` }],
    ['syntax error', { query: '{ me { username ' }],
    ['validation error', { query: '{ nope }' }],
    ['two operations, none named', { query: 'query A { me { username } } query B { me { roles } }' }],
    ['unknown operation name', { query: 'query A { me { username } }', operationName: 'B' }],
    ['unexpected parameter', { query: '{ me { username } }', nope: 1 }],
    ['too many aliases', { query: `{ ${Array.from({ length: 31 }, (_, i) => `a${i}: me { username }`).join(' ')} }` }],
    ['denied mutation', { query: `mutation { ${P}_deletePerson(name: "nobody") { metadata { name } } }` }],
  ];
  it.each(accepts.flatMap((accept) => bodies.map(([label, body]) => [label, accept, body] as const)))(
    '%s, Accept %s: the door answers like yoga',
    async (_label, accept, body) => {
      const anonymous = 'Basic ' + Buffer.from('nobody:wrong').toString('base64');
      for (const auth of [adminAuth, anonymous]) {
        const door = await postAs('application/json', body, accept, auth);
        const yoga = await postAs('application/json; x=yoga', body, accept, auth);
        expect(door).toEqual(yoga);
      }
    },
  );

  it('answers application/graphql-response+json when asked first', async () => {
    const res = await fetch(`${gw.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json, application/json' },
      body: JSON.stringify({ query: '{ me { username } }' }),
    });
    expect(res.headers.get('content-type')).toContain('application/graphql-response+json');
    expect((await res.json()).data.me.username).toBe('anonymous');
  });
});
