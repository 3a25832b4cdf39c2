/**
 * The whole-run secret audit (test/setup/secret-audit.ts) is itself tested: its matcher finds
 * what it must, and its capture really sees this file's responses, WebSocket messages and
 * gateway log lines and learns the secrets sent.
 */
import { get } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditCounts, findLeaks } from '../setup/secret-audit.js';
import { basicAuth, call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { wsClient, take } from '../graphql/helpers.js';

describe('secret audit', () => {
  it('finds known secrets, password hashes, digest fields and password values', () => {
    const known = ['hunter2-hunter2'];
    expect(findLeaks('{"user":"x","note":"hunter2-hunter2"}', known).map((f) => f.what)).toEqual(['known secret']);
    expect(findLeaks('hash $scrypt$N=16384,r=8,p=1$abc$def', known).map((f) => f.what)).toEqual(['password hash']);
    expect(findLeaks('{"secretDigest":"00ff"}', known).map((f) => f.what)).toEqual(['token digest field']);
    expect(findLeaks('{"spec":{"password" : "x"}}', known).map((f) => f.what)).toEqual(['password value']);
    // What a user object legitimately looks like, and schema text naming the field, pass.
    expect(findLeaks('{"spec":{"displayName":"Sam"}}', known)).toEqual([]);
    expect(findLeaks('input UserSpec { password: String }', known)).toEqual([]);
    expect(findLeaks('{"password":{"type":"string","writeOnly":true}}', known)).toEqual([]);
  });

  describe('capture', () => {
    let gw: TestGateway;
    beforeAll(async () => {
      gw = await startTestGateway('embedded');
    });
    afterAll(() => gw?.dispose());

    it('learns sent passwords and sees responses, WebSocket messages and log lines', async () => {
      const before = auditCounts();
      const password = 'audit-self-test-Password-1';
      expect(before.known.has(password)).toBe(false);
      expect((await call(gw, 'POST', '/api/v1alpha1/users', { metadata: { name: 'audited' }, spec: { password } })).status).toBe(201);
      expect(auditCounts().known.has(password)).toBe(true);
      expect(auditCounts().known.has('test-admin-password')).toBe(true); // from the Basic header
      const ws = wsClient(gw, { authorization: basicAuth('audited', password) });
      await take(ws.iterate({ query: '{ me { username } }' }), 1);
      await ws.dispose();
      const viaFetch = auditCounts().responses;
      await new Promise<void>((resolve, reject) =>
        get(`${gw.url}/healthz`, (res) => {
          res.resume();
          res.on('end', resolve);
        }).on('error', reject),
      );
      expect(auditCounts().responses).toBe(viaFetch + 1); // node:http clients are seen too
      const after = auditCounts();
      expect(after.responses).toBeGreaterThan(before.responses);
      expect(after.wsMessages).toBeGreaterThan(before.wsMessages);
      expect(after.logLines).toBeGreaterThan(0); // the gateway logs at trace level into the audit
    });
  });
});
