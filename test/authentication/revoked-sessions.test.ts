/**
 * A lost identity ends its open sessions (docs/API.md §2): revoking a token, disabling or
 * deleting a user, or changing their password ends every graphql-ws session (closed with 4401,
 * no operation runs after the revocation) and every watch stream (REST WebSocket and ndjson: an
 * ERROR 401 event, then the end) authenticated as it, within 5 s, on the gateway the change
 * went through and on a second gateway sharing the database. On both stores.
 */
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuth, call, startTestGateway, STORES, type TestGateway } from '../helpers/gateway.js';
import { bind, createRole, createUser } from '../helpers/rbac.js';
import { openNdjsonWatch, openWatch, sleep } from '../watch/helpers.js';

const PERSONS = '/apis/people.example.com/v1alpha1/persons';
const TOKENS = '/apis/uc.api.security.svc.run/v1alpha1/personalaccesstokens';
const MERGE = { 'content-type': 'application/merge-patch+json' };
const P = 'peopleExampleCom_v1alpha1';
/** The contract's bound, from the answer to the revoking request. */
const WITHIN_MS = 5000;

/** A graphql-ws session that stays connected, with its close code once closed. */
function session(gw: { url: string }, authorization: string) {
  let closedWith: number | undefined;
  const client: Client = createClient({
    url: `${gw.url.replace(/^http/, 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: { authorization },
    retryAttempts: 0,
    lazy: false,
    // the close is what the test waits for, not an error to print
    onNonLazyError: () => undefined,
    on: { closed: (e) => (closedWith = (e as { code: number }).code) },
  });
  /** Runs createPerson: 'ok', or the error's code, or 'closed'. */
  const create = async (name: string): Promise<string> => {
    try {
      const it = client.iterate({ query: `mutation { ${P}_createPerson(object: {metadata: {name: "${name}"}, spec: {name: "${name}"}}) { metadata { name } } }` });
      for await (const r of it) {
        const res = r as { data?: Record<string, { metadata: { name: string } } | null>; errors?: { extensions?: { code?: string } }[] };
        if (res.errors?.length) return res.errors[0]!.extensions?.code ?? 'error';
        if (res.data?.[`${P}_createPerson`]?.metadata.name === name) return 'ok';
      }
      return 'closed';
    } catch {
      return 'closed';
    }
  };
  return { client, create, closed: () => closedWith };
}

/** An ndjson watch: its events and whether the response ended. */
const ndjson = (gw: { url: string }, authorization: string) => openNdjsonWatch(gw, authorization);

async function waitFor(pred: () => boolean, what: string, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
    await sleep(20);
  }
}

/** Everything one identity has open on one gateway. */
function openAll(gw: { url: string }, authorization: string) {
  const gql = session(gw, authorization);
  const rest = openWatch(gw, '', { authorization });
  let restClosed: number | undefined;
  void rest.closed.then((c) => (restClosed = c));
  const nd = ndjson(gw, authorization);
  return {
    gql,
    rest,
    nd,
    async ready() {
      await rest.opened;
      await waitFor(() => rest.events.some((e) => e.type === 'ADDED') && nd.events.some((e) => e.type === 'ADDED'), 'the initial events', 15_000);
    },
    /** Every session and stream ended, as a lost identity ends them. */
    async ended(ms: number) {
      await waitFor(() => gql.closed() !== undefined && restClosed !== undefined && nd.ended, 'every session and stream to end', ms);
      expect(gql.closed()).toBe(4401);
      expect(restClosed).toBe(4401);
      expect(rest.events.at(-1)).toMatchObject({ type: 'ERROR', object: { code: 401 } });
      expect(nd.events.at(-1)).toMatchObject({ type: 'ERROR', object: { code: 401 } });
    },
    async close() {
      rest.close();
      nd.close();
      await gql.client.dispose();
    },
  };
}

describe.each(STORES)('a lost identity ends its sessions and streams (%s)', (kind) => {
  let a: TestGateway;
  let b: TestGateway;
  beforeAll(async () => {
    a = await startTestGateway(kind);
    // a second gateway on the same database (embedded: the same data directory)
    b = await startTestGateway(kind, { dataDir: a.dataDir, mongodbUrl: a.mongodbUrl });
    const rules = [{ apiGroups: ['people.example.com'], resources: ['persons'], verbs: ['get', 'list', 'watch', 'create'] }];
    expect((await createRole(a, 'persons-rw', rules)).status).toBe(201);
    expect((await call(a, 'POST', PERSONS, { metadata: { name: 'seed' }, spec: { name: 'Seed' } })).status).toBe(201);
  }, 180_000);
  afterAll(async () => {
    await b?.close();
    await a?.dispose();
  });

  /** A user allowed to create and watch persons; its Basic credentials. */
  async function member(name: string): Promise<string> {
    const auth = await createUser(a, name);
    expect((await bind(a, name, 'persons-rw')).status).toBe(201);
    return auth;
  }

  /** Opens everything as `auth` on both gateways, checks it works, runs `revoke`, then expects it all to end. */
  async function endsEverywhere(auth: string, tag: string, revoke: () => Promise<void>) {
    // b learns of the new user and binding through the shared database
    const end = Date.now() + 15_000;
    while ((await call(b, 'GET', PERSONS, undefined, { authorization: auth })).status !== 200) {
      if (Date.now() > end) throw new Error('gateway b never admitted the user');
      await sleep(100);
    }
    const here = openAll(a, auth);
    const there = openAll(b, auth);
    try {
      await Promise.all([here.ready(), there.ready()]);
      expect(await here.gql.create(`${tag}-a1`)).toBe('ok');
      expect(await there.gql.create(`${tag}-b1`)).toBe('ok');
      await revoke();
      const revokedAt = Date.now();
      // no operation runs after the revocation on the gateway it went through
      expect(await here.gql.create(`${tag}-a2`)).not.toBe('ok');
      await Promise.all([here.ended(WITHIN_MS - (Date.now() - revokedAt)), there.ended(WITHIN_MS - (Date.now() - revokedAt))]);
      expect(await there.gql.create(`${tag}-b2`)).not.toBe('ok');
      expect((await call(a, 'GET', `${PERSONS}/${tag}-a2`)).status).toBe(404);
      expect((await call(a, 'GET', `${PERSONS}/${tag}-b2`)).status).toBe(404);
    } finally {
      await here.close();
      await there.close();
    }
  }

  it('revoking a token ends the sessions and watches opened with it; the password sessions of its user go on', async () => {
    const auth = await member('pat-holder');
    const minted = await call(a, 'POST', TOKENS, { spec: { displayName: 'ws' } }, { authorization: auth });
    expect(minted.status).toBe(201);
    const bearer = `Bearer ${minted.body.token}`;
    const kept = session(a, auth);
    try {
      await endsEverywhere(bearer, 'pat', async () => {
        expect((await call(a, 'DELETE', `${TOKENS}/${minted.body.metadata.name}`, undefined, { authorization: auth })).status).toBe(200);
      });
      expect(await kept.create('pat-kept')).toBe('ok');
      expect(kept.closed()).toBeUndefined();
    } finally {
      await kept.client.dispose();
    }
  });

  it('disabling a user ends its Basic and token sessions', async () => {
    const auth = await member('to-disable');
    const minted = await call(a, 'POST', TOKENS, { spec: { displayName: 'ws' } }, { authorization: auth });
    const byToken = session(b, `Bearer ${minted.body.token}`);
    try {
      expect(await byToken.create('dis-t1')).toBe('ok');
      await endsEverywhere(auth, 'dis', async () => {
        expect((await call(a, 'PATCH', '/api/v1alpha1/users/to-disable', { spec: { disabled: true } }, MERGE)).status).toBe(200);
      });
      expect(byToken.closed()).toBe(4401);
    } finally {
      await byToken.client.dispose();
    }
  });

  it('a password change ends the sessions opened with the old password', async () => {
    const auth = await member('re-password');
    await endsEverywhere(auth, 'pw', async () => {
      expect((await call(a, 'PATCH', '/api/v1alpha1/users/re-password', { spec: { password: 'a-new-secret-1' } }, MERGE)).status).toBe(200);
    });
    // the new password opens a session that works
    const fresh = session(a, basicAuth('re-password', 'a-new-secret-1'));
    try {
      expect(await fresh.create('pw-new')).toBe('ok');
    } finally {
      await fresh.client.dispose();
    }
  });

  it('deleting a user ends its sessions', async () => {
    const auth = await member('to-delete');
    await endsEverywhere(auth, 'del', async () => {
      expect((await call(a, 'DELETE', '/api/v1alpha1/users/to-delete')).status).toBe(200);
    });
  });

  it('a token ends its streams and sessions when it expires', async () => {
    const auth = await member('short-lived');
    const expiresAt = Date.now() + 3000;
    const minted = await call(a, 'POST', TOKENS, { spec: { displayName: 'short', expiresAt: new Date(expiresAt).toISOString() } }, { authorization: auth });
    expect(minted.status).toBe(201);
    const all = openAll(a, `Bearer ${minted.body.token}`);
    try {
      await all.ready();
      expect(await all.gql.create('short-1')).toBe('ok');
      await all.ended(expiresAt - Date.now() + 2000);
    } finally {
      await all.close();
    }
  });
});
