/**
 * The header limit (src/limits.ts `headerBytes`) is the HTTP server's maxHeaderSize: a request
 * whose headers exceed it gets a 431 problem; one within it is served.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

describe('header limit', () => {
  let gw: TestGateway;
  // Well below Node's default of 16 KiB, so only a limit passed to the server can refuse 8 KiB.
  const headerBytes = 4096;
  beforeAll(async () => {
    gw = await startTestGateway('embedded', { limits: { headerBytes } });
  });
  afterAll(() => gw?.dispose());

  it('headers over limits.headerBytes get 431 problem+json; headers within it are served', async () => {
    const big = await fetch(`${gw.url}/healthz`, { headers: { 'x-padding': 'a'.repeat(2 * headerBytes) } });
    expect(big.status).toBe(431);
    expect(big.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect((await big.json()).status).toBe(431);

    const small = await fetch(`${gw.url}/healthz`, { headers: { 'x-padding': 'a'.repeat(headerBytes / 4) } });
    expect(small.status).not.toBe(431);
    await small.arrayBuffer();
  });
});
