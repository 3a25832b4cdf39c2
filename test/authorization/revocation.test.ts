/**
 * A revocation ends open streams (issue 8): when a RoleBinding is deleted or a Role loses the
 * `watch` verb, the caller's open REST watches (WebSocket and ndjson) and graphql-ws
 * subscriptions end with ERROR 403 / FORBIDDEN within seconds, on both stores, through the real
 * authorizer (no test double). Streams of callers who keep the right go on.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestGateway, STORES, type TestGateway } from '../helpers/gateway.js';
import { bind, createRole, createUser } from '../helpers/rbac.js';
import { expectForbiddenEnd, openStreams, PERSONS } from './streams.js';

const G = 'people.example.com';
const MERGE = { 'content-type': 'application/merge-patch+json' };
const person = (name: string) => ({ metadata: { name }, spec: { name, age: 30 } });

describe.each(STORES)('revocation ends open streams (%s)', (kind) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(kind);
    for (const n of ['ada', 'bob']) expect((await call(gw, 'POST', PERSONS, person(n))).status).toBe(201);
  });
  afterAll(() => gw?.dispose());

  it('deleting the binding ends REST watch, ndjson watch and graphql-ws with 403; others keep streaming', async () => {
    const auth = await createUser(gw, 'watcher');
    const other = await createUser(gw, 'bystander');
    expect((await bind(gw, 'watcher', 'people-view-persons')).status).toBe(201);
    expect((await bind(gw, 'bystander', 'people-view-persons')).status).toBe(201);
    const revoked = openStreams(gw, auth);
    const kept = openStreams(gw, other);
    try {
      await revoked.ready(2);
      await kept.ready(2);
      expect((await call(gw, 'DELETE', '/api/v1alpha1/rolebindings/watcher-people-view-persons')).status).toBe(200);
      await revoked.ended();
      await expectForbiddenEnd(revoked);
      // after the end, a change is not delivered to the revoked caller; the bystander gets it
      expect((await call(gw, 'POST', PERSONS, person('cyd'))).status).toBe(201);
      await kept.rest.until((ev) => ev.some((e) => e.type === 'ADDED' && e.object.metadata.name === 'cyd'), 'cyd on the kept stream');
      expect(kept.ndjson.ended).toBe(false);
      expect(kept.gql.ended).toBe(false);
      expect(revoked.rest.events.some((e) => e.object?.metadata?.name === 'cyd')).toBe(false);
      // and the caller cannot open a new one
      expect((await call(gw, 'GET', `${PERSONS}?watch=true`, undefined, { authorization: auth })).status).toBe(403);
    } finally {
      await revoked.close();
      await kept.close();
    }
  });

  it('a role losing the watch verb ends the streams of everyone holding it', async () => {
    const auth = await createUser(gw, 'role-watcher');
    expect((await createRole(gw, 'people-watch-only', [{ apiGroups: [G], resources: ['persons'], verbs: ['get', 'list', 'watch'] }])).status).toBe(201);
    expect((await bind(gw, 'role-watcher', 'people-watch-only')).status).toBe(201);
    const s = openStreams(gw, auth);
    try {
      await s.ready(2);
      const patched = await call(gw, 'PATCH', '/api/v1alpha1/roles/people-watch-only', { rules: [{ apiGroups: [G], resources: ['persons'], verbs: ['get', 'list'] }] }, MERGE);
      expect(patched.status).toBe(200);
      await s.ended();
      await expectForbiddenEnd(s);
      // the rest of the role still holds
      expect((await call(gw, 'GET', PERSONS, undefined, { authorization: auth })).status).toBe(200);
    } finally {
      await s.close();
    }
  });
});
