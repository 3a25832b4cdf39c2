/**
 * Contract audit (docs/API.md §4 unknown parameters and status codes, §8–§10 browsers and
 * operations): behaviour the black-box reading of the contract expects, found missing and fixed.
 * These routes do not touch the store's query paths, so the embedded store is enough here.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { ANONYMOUSLY, adminAuth, call, startTestGateway, type TestGateway } from '../helpers/gateway.js';

const ORIGIN = 'http://app.example.test';

/** GET with the path sent exactly as written (fetch would resolve `.` and `..` first). */
function rawGet(gw: TestGateway, path: string): Promise<{ status: number; type: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = request(gw.url + '/', { path }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, type: res.headers['content-type'] }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** The status and body of a WebSocket upgrade the server refuses (or 101 when it accepts). */
function upgrade(gw: TestGateway, path: string, protocols: string[] = []): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(gw.url.replace('http', 'ws') + path, protocols, { headers: { authorization: adminAuth } });
    ws.on('open', () => {
      ws.close();
      resolve({ status: 101, body: '' });
    });
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    ws.on('error', () => resolve({ status: 0, body: '' }));
  });
}

describe('contract audit findings', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway('embedded', { corsOrigins: [ORIGIN] });
  });
  afterAll(async () => {
    await gw?.dispose();
  });

  it('a CORS answer keeps Vary: Origin beside the handler\'s own Vary (discovery, OpenAPI, GraphiQL)', async () => {
    for (const path of ['/apis', '/openapi/v3', '/api/v1alpha1']) {
      const res = await call(gw, 'GET', path, undefined, { origin: ORIGIN });
      expect(res.status, path).toBe(200);
      expect(res.headers.get('access-control-allow-origin'), path).toBe(ORIGIN);
      const vary = (res.headers.get('vary') ?? '').toLowerCase().split(/\s*,\s*/);
      expect(vary, path).toContain('origin');
      expect(vary, path).toContain('authorization');
    }
    const page = await call(gw, 'GET', '/graphql', undefined, { origin: ORIGIN, accept: 'text/html' });
    expect(page.status).toBe(200);
    const vary = (page.headers.get('vary') ?? '').toLowerCase().split(/\s*,\s*/);
    expect(vary).toContain('origin');
    expect(vary).toContain('accept');
    // Without an Origin nothing changes.
    const plain = await call(gw, 'GET', '/apis');
    expect(plain.headers.get('vary')).toBe('Authorization');
  });

  it('the health endpoints take GET and HEAD only: other methods get 405 problem+json with Allow', async () => {
    for (const path of ['/livez', '/readyz', '/healthz']) {
      for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
        const res = await call(gw, method, path, undefined, ANONYMOUSLY);
        expect(res.status, `${method} ${path}`).toBe(405);
        expect(res.headers.get('content-type')).toBe('application/problem+json');
        expect(res.headers.get('allow')).toBe('GET, HEAD');
      }
      const head = await fetch(gw.url + path, { method: 'HEAD' });
      expect(head.status, `HEAD ${path}`).toBe(200);
      expect((await call(gw, 'GET', path, undefined, ANONYMOUSLY)).status).toBe(200);
    }
  });

  it('a graphql-ws upgrade with an unknown query parameter gets 400 naming it', async () => {
    const bad = await upgrade(gw, '/graphql?x-debug=1', ['graphql-transport-ws']);
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.body)).toMatchObject({ status: 400 });
    expect(bad.body).toContain('x-debug');
    expect((await upgrade(gw, '/graphql', ['graphql-transport-ws'])).status).toBe(101);
  });

  it('the console\'s page and files refuse unknown query parameters with 400, like every route', async () => {
    for (const path of ['/console/?x=1', '/console/users?tab=2', '/console/assets/app.js?v=1']) {
      const res = await call(gw, 'GET', path, undefined, ANONYMOUSLY);
      expect(res.status, path).toBe(400);
      expect(res.headers.get('content-type')).toBe('application/problem+json');
      expect(res.body.detail).toMatch(/unknown query parameter/);
    }
    expect((await call(gw, 'GET', '/console/', undefined, ANONYMOUSLY)).status).toBe(200);
    expect((await call(gw, 'GET', '/console/assets/app.js', undefined, ANONYMOUSLY)).status).toBe(200);
  });

  it('a console path with an empty, "." or ".." segment, encoded or not, gets 400 and never the page', async () => {
    for (const path of ['/console/../apis', '/console/%2e%2e/apis', '/console/./users', '/console/users/', '/console//users', '/console/assets/../app.js']) {
      const res = await rawGet(gw, path);
      expect(res.status, path).toBe(400);
      expect(res.type, path).toBe('application/problem+json');
    }
    for (const path of ['/console/', '/console/users', '/console/persons']) expect((await rawGet(gw, path)).status, path).toBe(200);
  });
});
