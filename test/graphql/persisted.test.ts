/**
 * Persisted operations (docs/API.md §13): automatic persisted queries over POST, GET and
 * graphql-ws, and the SVC_GRAPHQL_OPERATIONS allow-list. Nothing here reaches a store, so one
 * store suffices.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, writeFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { take, wsClient } from './helpers.js';

const ME = '{ me { username } }';
const sha = (text: string) => createHash('sha256').update(text).digest('hex');
const pq = (hash: string) => ({ persistedQuery: { version: 1, sha256Hash: hash } });

async function post(gw: TestGateway, body: unknown) {
  const res = await fetch(`${gw.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json', authorization: adminAuth },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: JSON.parse(await res.text()) };
}

async function get(gw: TestGateway, params: Record<string, unknown>) {
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) qs.set(k, typeof v === 'string' ? v : JSON.stringify(v));
  const res = await fetch(`${gw.url}/graphql?${qs}`, { headers: { accept: 'application/graphql-response+json', authorization: adminAuth } });
  return { status: res.status, body: JSON.parse(await res.text()) };
}

const noStack = (body: unknown) => expect(JSON.stringify(body)).not.toMatch(/\n\s+at |\.ts:\d+/);

describe('automatic persisted queries', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway('embedded');
  });
  afterAll(() => gw?.dispose());

  it('POST: an unknown hash gets PersistedQueryNotFound; the text with its hash runs and is remembered', async () => {
    const text = `query PostApq ${ME}`;
    const miss = await post(gw, { extensions: pq(sha(text)) });
    expect(miss.status).toBe(404);
    expect(miss.body.errors[0].message).toBe('PersistedQueryNotFound');
    expect(miss.body.errors[0].extensions).toEqual({ code: 'PERSISTED_QUERY_NOT_FOUND' });
    const sent = await post(gw, { query: text, extensions: pq(sha(text)) });
    expect(sent.body).toEqual({ data: { me: { username: 'admin' } } });
    const hit = await post(gw, { extensions: pq(sha(text)) });
    expect(hit.body).toEqual({ data: { me: { username: 'admin' } } });
  });

  it('GET: the same protocol in the query string', async () => {
    const text = `query GetApq ${ME}`;
    const miss = await get(gw, { extensions: pq(sha(text)) });
    expect(miss.body.errors[0].message).toBe('PersistedQueryNotFound');
    expect((await get(gw, { query: text, extensions: pq(sha(text)) })).body).toEqual({ data: { me: { username: 'admin' } } });
    expect((await get(gw, { extensions: pq(sha(text)) })).body).toEqual({ data: { me: { username: 'admin' } } });
  });

  it('graphql-ws: a hash with an empty query runs the remembered document; an unknown one is PersistedQueryNotFound', async () => {
    const text = `query WsApq ${ME}`;
    const client = wsClient(gw, { authorization: adminAuth });
    try {
      await expect(take(client.iterate({ query: '', extensions: pq(sha(text)) }), 1)).rejects.toSatisfy(
        (errors: any) => Array.isArray(errors) && errors[0].message === 'PersistedQueryNotFound',
      );
      const [first] = await take(client.iterate({ query: text, extensions: pq(sha(text)) }), 1);
      expect(first).toEqual({ data: { me: { username: 'admin' } } });
      const [again] = await take(client.iterate({ query: '', extensions: pq(sha(text)) }), 1);
      expect(again).toEqual({ data: { me: { username: 'admin' } } });
    } finally {
      await client.dispose();
    }
  });

  it('bad persistedQuery values and a hash that is not the text’s are BAD_REQUEST (400), remembering nothing, with no stack', async () => {
    const text = `query Bad ${ME}`;
    const bad = [
      { query: text, extensions: pq(sha('something else')) },
      { query: text, extensions: { persistedQuery: { version: 2, sha256Hash: sha(text) } } },
      { query: text, extensions: { persistedQuery: { version: 1, sha256Hash: 42 } } },
      { extensions: { persistedQuery: { version: 1, sha256Hash: 'not-hex' } } },
      { extensions: { persistedQuery: 'yes' } },
    ];
    for (const body of bad) {
      const r = await post(gw, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.errors[0].extensions.code).toBe('BAD_REQUEST');
      expect(r.body.data).toBeUndefined();
      noStack(r.body);
    }
    // The mismatching text was not remembered under the other hash.
    expect((await post(gw, { extensions: pq(sha('something else')) })).body.errors[0].message).toBe('PersistedQueryNotFound');
  });
});

describe('allow-list (SVC_GRAPHQL_OPERATIONS)', () => {
  let gw: TestGateway;
  let dir: string;
  const ALLOWED = `query Allowed ${ME}`;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-ops-'));
    const file = join(dir, 'operations.json');
    await writeFile(file, JSON.stringify({ [sha(ALLOWED)]: ALLOWED, 'custom-id': '{ me { roles } }' }));
    gw = await startTestGateway('embedded', { config: { graphqlOperations: file } });
  });
  afterAll(async () => {
    await gw?.dispose();
    await rm(dir, { recursive: true, force: true });
  });

  it('runs the listed operations by hash (any key of the file) or exact text, over POST and GET', async () => {
    expect((await post(gw, { extensions: pq(sha(ALLOWED)) })).body).toEqual({ data: { me: { username: 'admin' } } });
    expect((await post(gw, { query: ALLOWED })).body).toEqual({ data: { me: { username: 'admin' } } });
    expect((await get(gw, { extensions: pq(sha(ALLOWED)) })).body).toEqual({ data: { me: { username: 'admin' } } });
    expect((await get(gw, { query: ALLOWED })).body).toEqual({ data: { me: { username: 'admin' } } });
    const custom = await post(gw, { extensions: pq('custom-id') });
    expect(custom.body.data.me.roles).toContain('super-role');
  });

  it('refuses any other operation with BAD_REQUEST (400): other text, unknown hash, text differing from its hash', async () => {
    const refused = [
      { query: ME },
      { query: `${ALLOWED} ` },
      { extensions: pq(sha(ME)) },
      { query: ME, extensions: pq(sha(ALLOWED)) },
      { query: ME, extensions: pq(sha(ME)) },
    ];
    for (const body of refused) {
      const r = await post(gw, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.errors[0].extensions.code).toBe('BAD_REQUEST');
      expect(r.body.data).toBeUndefined();
      noStack(r.body);
    }
    const viaGet = await get(gw, { query: ME });
    expect(viaGet.status).toBe(400);
    expect(viaGet.body.errors[0].extensions.code).toBe('BAD_REQUEST');
  });

  it('graphql-ws obeys the allow-list', async () => {
    const client = wsClient(gw, { authorization: adminAuth });
    try {
      const [ok] = await take(client.iterate({ query: ALLOWED }), 1);
      expect(ok).toEqual({ data: { me: { username: 'admin' } } });
      const [byHash] = await take(client.iterate({ query: '', extensions: pq(sha(ALLOWED)) }), 1);
      expect(byHash).toEqual({ data: { me: { username: 'admin' } } });
      await expect(take(client.iterate({ query: ME }), 1)).rejects.toSatisfy(
        (errors: any) => Array.isArray(errors) && errors[0].extensions.code === 'BAD_REQUEST',
      );
    } finally {
      await client.dispose();
    }
  });

  it('a file that is not an allow-list fails the start with a clear reason', async () => {
    const bad = join(dir, 'bad.json');
    await writeFile(bad, JSON.stringify({ abc: '{ me { ' }));
    await expect(startTestGateway('embedded', { config: { graphqlOperations: bad } })).rejects.toThrow(/SVC_GRAPHQL_OPERATIONS: .*"abc" does not parse/);
    await expect(startTestGateway('embedded', { config: { graphqlOperations: join(dir, 'missing.json') } })).rejects.toThrow(/SVC_GRAPHQL_OPERATIONS: cannot read/);
  });
});
