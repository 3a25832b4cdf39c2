/**
 * Unknown query parameters get 400 naming them, on every route: a misspelled selector must never
 * be dropped and widen a list or a deletecollection to the whole collection. Both stores.
 */
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANONYMOUSLY, call, STORES, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { adminAuth } from '../helpers/gateway.js';

const PEOPLE = '/apis/crm.example.net/v1/people';

describe.each(STORES)('unknown query parameters (%s)', (kind) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(kind);
    for (const n of ['c1', 'c2', 'c3']) {
      expect((await call(gw, 'POST', PEOPLE, { metadata: { name: n }, spec: { email: `${n}@x.org` } })).status).toBe(201);
    }
  });
  afterAll(() => gw?.dispose());

  const names = async () => (await call(gw, 'GET', PEOPLE)).body.items.map((o: any) => o.metadata.name).sort();

  it('a misspelled selector on DELETE of a collection deletes nothing and names the parameter', async () => {
    const res = await call(gw, 'DELETE', `${PEOPLE}?fieldselector=spec.email=c1@x.org`);
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    expect(res.body.detail).toContain('"fieldselector"');
    expect(res.body.detail).toContain('did you mean "fieldSelector"?');
    expect(await names()).toEqual(['c1', 'c2', 'c3']);
    // Spelled right, the same request deletes exactly the one object.
    const ok = await call(gw, 'DELETE', `${PEOPLE}?fieldSelector=spec.email=c1@x.org`);
    expect(ok.status).toBe(200);
    expect(ok.body.items.map((o: any) => o.metadata.name)).toEqual(['c1']);
    expect(await names()).toEqual(['c2', 'c3']);
    expect((await call(gw, 'POST', PEOPLE, { metadata: { name: 'c1' }, spec: { email: 'c1@x.org' } })).status).toBe(201);
  });

  it('refuses unknown parameters on list, get, create, update, patch, delete and status', async () => {
    const cases: [string, string, unknown?][] = [
      ['GET', `${PEOPLE}?labelselector=a%3Db`],
      ['GET', `${PEOPLE}?size=1&limt=1`],
      // keyset paging is for lists, not for deletecollection
      ['DELETE', `${PEOPLE}?limit=1`],
      ['GET', `${PEOPLE}/c2?pretty=true`],
      ['POST', `${PEOPLE}?dryRun=All`, { metadata: { name: 'dry' }, spec: { email: 'dry@x.org' } }],
      ['PUT', `${PEOPLE}/c2?x=1`, { metadata: { name: 'c2' }, spec: { email: 'new@x.org' } }],
      ['PATCH', `${PEOPLE}/c2?x=1`, { spec: { email: 'new@x.org' } }],
      ['DELETE', `${PEOPLE}/c2?propagationPolicy=Orphan`],
      ['GET', `${PEOPLE}/c2/status?x=1`],
      // A watch parameter is not a delete parameter.
      ['DELETE', `${PEOPLE}?watch=true`],
    ];
    for (const [method, path, body] of cases) {
      const res = await call(gw, method, path, body, body ? { 'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json' } : {});
      expect(res.status, `${method} ${path}`).toBe(400);
      expect(res.body.detail, `${method} ${path}`).toMatch(/unknown query parameter/);
    }
    expect(await names()).toEqual(['c1', 'c2', 'c3']);
    expect((await call(gw, 'GET', `${PEOPLE}/c2`)).body.spec.email).toBe('c2@x.org');
  });

  it('accepts the documented parameters', async () => {
    const res = await call(gw, 'GET', `${PEOPLE}?page=1&size=2&sort=metadata.name,asc&labelSelector=&fieldSelector=spec.email!=zz&resourceVersion=&timeoutSeconds=5&allowWatchBookmarks=false`);
    expect(res.status).toBe(200);
    expect(res.body.items.map((o: any) => o.metadata.name)).toEqual(['c1', 'c2']);
    const keyset = await call(gw, 'GET', `${PEOPLE}?limit=2&continue=&sort=metadata.name,asc`);
    expect(keyset.status).toBe(200);
    expect(keyset.body.items.map((o: any) => o.metadata.name)).toEqual(['c1', 'c2']);
  });

  it('authorization comes first: an anonymous caller learns nothing about parameters', async () => {
    const res = await call(gw, 'DELETE', `${PEOPLE}?fieldselector=x`, undefined, ANONYMOUSLY);
    expect(res.status).toBe(401);
  });

  it('refuses unknown parameters on platform routes, health and /graphql', async () => {
    for (const path of ['/apis/api.console.svc.run/v1alpha1/users/-/permissions?x=1', '/apis/uc.api.security.svc.run/v1alpha1/personalaccesstokens?x=1', '/healthz?x=1', '/graphql?query=%7B__typename%7D&foo=1']) {
      const res = await call(gw, 'GET', path);
      expect(res.status, path).toBe(400);
      expect(res.body.detail, path).toContain('"x"'.replace('x', path.endsWith('foo=1') ? 'foo' : 'x'));
    }
    expect((await call(gw, 'GET', '/graphql?query=%7B__typename%7D')).status).toBe(200);
  });

  it('refuses an unknown parameter on a WebSocket watch before it opens', async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const ws = new WebSocket(`${gw.url.replace(/^http/, 'ws')}${PEOPLE}?watch=true&labelselector=a`, { headers: { authorization: adminAuth } });
      ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.on('open', () => reject(new Error('the watch opened')));
      ws.on('error', () => undefined);
    });
    expect(status).toBe(400);
  });
});
