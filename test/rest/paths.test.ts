/**
 * docs/API.md §4: paths are taken as written. An empty, `.` or `..` segment (percent-encoded or
 * not, trailing slash included) is never a collection or an object: 400 or 404, nothing changed.
 * Requests are sent with node:http so the path reaches the server exactly as written (fetch and
 * WebSocket clients would normalise it first, as `curl --path-as-is` does not).
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, call, startTestGateway, STORES, type TestGateway } from '../helpers/gateway.js';

const P = '/apis/people.example.com/v1alpha1/persons';
const VARIANTS = [
  `${P}/`, `${P}/.`, `${P}/..`, `${P}/%2e`, `${P}/%2E`, `${P}/%2e%2e`, `${P}/.%2E`, `${P}/a/..`, `${P}/a/%2e%2e`,
  `${P}/./`, `${P}//`, `${P}/ada/`, `${P}/ada/.`, `${P}/ada/./status`, `${P}/ada/status/`, `${P}/ada/status/..`,
  '/apis/people.example.com/v1alpha1/./persons', '/apis/people.example.com/v1alpha1/persons/x/../../persons',
  `/${P}`, '/api/v1alpha1/users/', '/api/v1alpha1/users/%2e', '/api/v1alpha1/users/admin/..',
];
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

function raw(gw: TestGateway, method: string, path: string, headers: Record<string, string> = {}, body?: string) {
  const { hostname, port } = new URL(gw.url);
  return new Promise<{ status: number; type: string; upgraded: boolean }>((resolve, reject) => {
    const req = request({ hostname, port, method, path, headers: { authorization: adminAuth, ...headers } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), upgraded: false }));
    });
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode ?? 0, type: '', upgraded: true });
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe.each(STORES)('malformed paths change nothing (%s)', (kind) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(kind);
    for (const name of ['ada', 'bob', 'cy']) {
      const r = await call(gw, 'POST', P, { metadata: { name }, spec: { name } }, { authorization: adminAuth });
      expect(r.status).toBe(201);
    }
  });
  afterAll(() => gw?.dispose());

  it('answers 400 or 404 problem+json on every verb, and no object changes', async () => {
    const before = await call(gw, 'GET', P, undefined, { authorization: adminAuth });
    expect(before.body.total).toBe(3);
    const body = JSON.stringify({ metadata: { name: 'ada', version: 1 }, spec: { name: 'x' } });
    for (const path of VARIANTS) {
      for (const method of METHODS) {
        const headers: Record<string, string> =
          method === 'PATCH' ? { 'content-type': 'application/merge-patch+json' } : { 'content-type': 'application/json' };
        const r = await raw(gw, method, path, headers, method === 'GET' || method === 'DELETE' ? undefined : body);
        expect.soft([400, 404], `${method} ${path} → ${r.status}`).toContain(r.status);
        expect.soft(r.type, `${method} ${path}`).toContain('application/problem+json');
      }
    }
    const after = await call(gw, 'GET', P, undefined, { authorization: adminAuth });
    expect(after.body.total).toBe(3);
    expect(after.body.items.map((o: any) => [o.metadata.name, o.metadata.version, o.metadata.deletionTimestamp])).toEqual(
      before.body.items.map((o: any) => [o.metadata.name, o.metadata.version, o.metadata.deletionTimestamp]),
    );
  });

  it('refuses a watch upgrade or ndjson watch on a malformed path', async () => {
    for (const path of [`${P}/`, `${P}/.`, `${P}/%2e`, `${P}/a/..`]) {
      const ws = await raw(gw, 'GET', path, {
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-version': '13',
        'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
      });
      expect(ws.upgraded, path).toBe(false);
      expect([400, 404], path).toContain(ws.status);
      const nd = await raw(gw, 'GET', `${path}?watch=true`);
      expect([400, 404], path).toContain(nd.status);
    }
  });
});
