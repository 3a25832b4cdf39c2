/**
 * No password, token or hash in any log line or response: a gateway logging at the most verbose
 * level is driven through everything that handles secrets (user writes over REST and GraphQL,
 * good and bad logins, tokens, failures), and every captured log line and response is scanned.
 * (The whole run is audited the same way too: test/setup/secret-audit.ts.)
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, adminAuth, ANONYMOUSLY, basicAuth, call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { gql, wsClient, take } from '../graphql/helpers.js';

const TOKENS = '/apis/uc.api.security.svc.run/v1alpha1/personalaccesstokens';
const PERMISSIONS = '/apis/api.console.svc.run/v1alpha1/users/-/permissions';

describe('no secrets in logs or responses', () => {
  const lines: string[] = [];
  const responses: string[] = [];
  let gw: TestGateway;
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  beforeAll(async () => {
    gw = await startTestGateway('embedded', { logger: pino({ level: 'trace' }, sink) });
  });
  afterAll(() => gw?.dispose());

  const record = async <T extends { body: unknown }>(p: Promise<T>): Promise<T> => {
    const r = await p;
    responses.push(typeof r.body === 'string' ? r.body : JSON.stringify(r.body));
    return r;
  };

  it('never logs or returns a password, a token or a hash', async () => {
    const secrets = ['pw-rest-Secret-1', 'pw-gql-Secret-2', 'pw-patch-Secret-3', 'pw-wrong-Secret-4', ADMIN.password];
    await record(call(gw, 'POST', '/api/v1alpha1/users', { metadata: { name: 'sam' }, spec: { password: secrets[0] } }));
    await record(
      gql(gw, `mutation { core_v1alpha1_createUser(object: { metadata: { name: "gil" }, spec: { password: "${secrets[1]}" } }) { metadata { name } } }`, undefined, {
        authorization: adminAuth,
      }),
    );
    await record(call(gw, 'PATCH', '/api/v1alpha1/users/sam', { spec: { password: secrets[2] } }, { 'content-type': 'application/merge-patch+json' }));
    await record(call(gw, 'PUT', '/api/v1alpha1/users/sam', { metadata: { name: 'sam' }, spec: { password: secrets[2] } })); // 422: no version
    await record(call(gw, 'POST', '/api/v1alpha1/users', { metadata: { name: 'Bad Name' }, spec: { password: secrets[0] } })); // 422
    await record(call(gw, 'POST', '/api/v1alpha1/users', `{"spec":{"password":"${secrets[0]}"`)); // malformed JSON
    for (let i = 0; i < 12; i++) await record(call(gw, 'GET', PERMISSIONS, undefined, { authorization: basicAuth(i % 2 ? 'nobody' : 'gil', secrets[3]) }));
    await record(gql(gw, '{ me { username } }', undefined, { authorization: basicAuth('gil', secrets[3]) }));
    const ws = wsClient(gw, { authorization: basicAuth('gil', secrets[3]) });
    await take(ws.iterate({ query: '{ me { username } }' }), 1).catch(() => undefined);
    await ws.dispose();

    const created = await call(gw, 'POST', TOKENS, { spec: { displayName: 'ci' } }, { authorization: basicAuth('sam', secrets[2]) });
    expect(created.status).toBe(201);
    const token: string = created.body.token;
    await record(call(gw, 'GET', TOKENS, undefined, { authorization: `Bearer ${token}` }));
    await record(call(gw, 'GET', PERMISSIONS, undefined, { authorization: `Bearer ${token}x` }));
    await record(call(gw, 'DELETE', `${TOKENS}/${created.body.metadata.name}`, undefined, { authorization: `Bearer ${token}` }));
    await record(call(gw, 'GET', PERMISSIONS, undefined, { authorization: `Bearer ${token}` }));
    await record(call(gw, 'GET', '/api/v1alpha1/users'));
    await record(call(gw, 'GET', '/api/v1alpha1/users', undefined, ANONYMOUSLY));

    expect(lines.length).toBeGreaterThan(0); // the capture works
    const logs = lines.join('');
    const answers = responses.join('\n');
    // `svcpat_<name>_<secret>`: the secret is base64url and may itself contain "_" (splitting
    // on the last one once gave a one-letter "secret" that every response contains).
    const secretPart = token.split('_').slice(2).join('_');
    expect(secretPart.length).toBeGreaterThanOrEqual(40);
    for (const s of [...secrets, token, secretPart]) {
      expect(logs).not.toContain(s);
      expect(answers).not.toContain(s);
    }
    for (const text of [logs, answers]) {
      expect(text).not.toContain('$scrypt$');
      expect(text).not.toMatch(/secretDigest|"password"/);
      expect(text).not.toMatch(/Basic [A-Za-z0-9+/=]{8,}/);
    }
  });
});
