/**
 * Contract audit (CONTRACT §4 unknown parameters and status codes, §8–§10 browsers and
 * operations): behaviour the black-box reading of the contract expects, found missing and fixed.
 * These routes do not touch the store's query paths, so the embedded store is enough here.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';

const ORIGIN = 'http://app.example.test';

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
});
