/**
 * The request pipeline (docs/API.md §6 "Order of the checks"): authentication → request attributes
 * → authorization → route. Callers without the right get 401/403 whatever the body or the path;
 * only allowed callers learn about 400, 404, 405 and 415.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RouteHandler } from '../../src/pipeline/routes.js';
import { sendJson } from '../../src/errors/http.js';
import { ANONYMOUSLY, basicAuth, call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { bind, createRole, createUser } from '../helpers/rbac.js';

const PERSONS = '/apis/people.example.com/v1alpha1/persons';

describe('request pipeline', () => {
  let gw: TestGateway;
  let user: string;
  const seen: string[] = [];
  const echo: RouteHandler = async (_req, res, rc) => {
    seen.push(rc.caller.username);
    sendJson(res, 200, { caller: rc.caller.username, verb: rc.info.verb });
  };
  beforeAll(async () => {
    gw = await startTestGateway('embedded', {
      customRoutes: { match: (method, path) => (path === '/custom/echo' || path === '/apis/console.api.example.com/v1/echoes' ? echo : undefined) },
    });
    user = await createUser(gw, 'plain');
  });
  afterAll(() => gw?.dispose());

  it('serves /healthz to everyone, even with wrong credentials', async () => {
    expect((await call(gw, 'GET', '/healthz', undefined, ANONYMOUSLY)).status).toBe(200);
    expect((await call(gw, 'GET', '/healthz', undefined, { authorization: basicAuth('x', 'y') })).status).toBe(200);
  });

  it('wrong credentials: 401 with WWW-Authenticate on every path, before anything else', async () => {
    const bad = { authorization: basicAuth('admin', 'wrong') };
    for (const [method, path] of [
      ['GET', PERSONS],
      ['GET', '/nowhere'],
      ['POST', '/apis/nothing.example.com/v1/things'],
      ['GET', `${PERSONS}/%2e`],
    ] as const) {
      const r = await call(gw, method, path, method === 'POST' ? '{' : undefined, bad);
      expect(r.status, `${method} ${path}`).toBe(401);
      expect(r.headers.get('www-authenticate')).toMatch(/^Basic/);
      expect(r.headers.get('content-type')).toBe('application/problem+json');
    }
  });

  it('a caller without the right gets 401 (anonymous) or 403 (logged in) before 400, 404, 405 or 415', async () => {
    const cases: [string, string, unknown, Record<string, string>?][] = [
      ['POST', PERSONS, '{"not json'],
      ['POST', PERSONS, '{}', { 'content-type': 'text/plain' }],
      ['GET', '/apis/nothing.example.com/v1/things/x', undefined],
      ['PUT', PERSONS, '{}'],
      ['GET', `${PERSONS}/x/nosuchsub`, undefined],
      ['GET', `${PERSONS}/%2e%2e`, undefined],
      ['GET', '/not/a/resource/path', undefined],
      ['DELETE', '/api/v1alpha1/roles', undefined],
    ];
    for (const [method, path, body, headers] of cases) {
      expect((await call(gw, method, path, body, { ...headers, authorization: user })).status, `${method} ${path} as a user`).toBe(403);
      const anon = await call(gw, method, path, body, { ...headers, ...ANONYMOUSLY });
      expect(anon.status, `${method} ${path} anonymously`).toBe(401);
      expect(anon.headers.get('www-authenticate')).toMatch(/^Basic/);
    }
    // the administrator, allowed everywhere, learns what is wrong
    expect((await call(gw, 'POST', PERSONS, '{"not json')).status).toBe(400);
    expect((await call(gw, 'POST', PERSONS, '{}', { 'content-type': 'text/plain' })).status).toBe(415);
    expect((await call(gw, 'GET', '/apis/nothing.example.com/v1/things/x')).status).toBe(404);
    expect((await call(gw, 'PUT', PERSONS, '{}')).status).toBe(405);
    expect((await call(gw, 'GET', `${PERSONS}/%2e%2e`)).status).toBe(400);
    expect((await call(gw, 'GET', '/not/a/resource/path')).status).toBe(404);
  });

  it('authorizes non-resource paths against nonResourceURLs', async () => {
    const auth = await createUser(gw, 'ops');
    expect((await createRole(gw, 'ops-paths', [{ nonResourceURLs: ['/ops/*', '/custom/echo'], verbs: ['get'] }])).status).toBe(201);
    expect((await bind(gw, 'ops', 'ops-paths')).status).toBe(201);
    expect((await call(gw, 'GET', '/ops/metrics', undefined, { authorization: auth })).status).toBe(404); // allowed, no such route
    expect((await call(gw, 'GET', '/ops', undefined, { authorization: auth })).status).toBe(403); // not strictly below /ops
    expect((await call(gw, 'POST', '/ops/metrics', '{}', { authorization: auth })).status).toBe(403); // verb
    expect((await call(gw, 'GET', '/custom/echo', undefined, { authorization: auth })).body).toEqual({ caller: 'ops', verb: 'get' });
  });

  it('consults the custom-route slot only after authorization', async () => {
    seen.length = 0;
    expect((await call(gw, 'GET', '/custom/echo', undefined, { authorization: user })).status).toBe(403);
    expect((await call(gw, 'GET', '/apis/console.api.example.com/v1/echoes', undefined, ANONYMOUSLY)).status).toBe(401);
    expect(seen).toEqual([]);
    const admin = await call(gw, 'GET', '/apis/console.api.example.com/v1/echoes');
    expect(admin.body).toEqual({ caller: 'admin', verb: 'list' });
    expect(seen).toEqual(['admin']);
  });

  it('refuses watch upgrades of callers without the right before looking the resource up', async () => {
    const { watchSocket } = await import('../helpers/rbac.js');
    expect(await watchSocket(`${gw.url}/apis/nothing.example.com/v1/things`, user).opened).toBe(403);
    expect(await watchSocket(`${gw.url}/apis/nothing.example.com/v1/things`).opened).toBe(401);
    expect(await watchSocket(`${gw.url}/apis/nothing.example.com/v1/things`, basicAuth('admin', 'test-admin-password')).opened).toBe(404);
    expect(await watchSocket(`${gw.url}${PERSONS}`, basicAuth('admin', 'bad')).opened).toBe(401);
  });
});

describe('one authorization per request', () => {
  it('REST and GraphQL ask the authorizer once per request (the operation reuses the decision)', async () => {
    const { testAuthorizer, gql } = await import('../graphql/helpers.js');
    const authz = testAuthorizer();
    const gw = await startTestGateway('embedded', { authorizer: authz });
    try {
      expect((await call(gw, 'POST', PERSONS, { metadata: { name: 'once' }, spec: { name: 'Once' } })).status).toBe(201);
      authz.calls.length = 0;
      expect((await call(gw, 'GET', `${PERSONS}/once`)).status).toBe(200);
      expect(authz.calls.map((c) => `${c.verb} ${c.resource} ${c.name}`)).toEqual(['get persons once']);
      authz.calls.length = 0;
      const r = await gql(gw, '{ peopleExampleCom_v1alpha1_person(name: "once") { metadata { name } } }');
      expect(r.body.data.peopleExampleCom_v1alpha1_person.metadata.name).toBe('once');
      expect(authz.calls.map((c) => `${c.verb} ${c.resource} ${c.name}`)).toEqual(['get persons once']);
    } finally {
      await gw.dispose();
    }
  });
});
