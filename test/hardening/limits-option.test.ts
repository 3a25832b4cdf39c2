/**
 * GatewayOptions.limits is the one source of the limits (src/limits.ts): every row set through
 * the option is enforced with the value set, over the real server, on both stores. (Body size,
 * JSON depth, object and metadata sizes, list parameters and the WebSocket message size used to
 * read the frozen defaults and ignored the option.) The rows enforced at the connection and
 * store level have their own option tests: headerBytes (header-limit.test.ts), the HTTP timeouts
 * (watch/pings.test.ts), watchesPerUser (watch/quota.test.ts), storeTimeoutMs (lost-update.test.ts,
 * outage.test.ts); connectionsPerAddress is checked here.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { GatewayLimits } from '../../src/limits.js';
import { adminAuth, call, startTestGateway, STORES, type TestGateway } from '../helpers/gateway.js';

const PERSONS = '/apis/people.example.com/v1alpha1/persons';
const H = { authorization: adminAuth };

/** Small values, far below the defaults, so each is reached with small requests (above what the gateway's own objects need). */
const SMALL: Partial<GatewayLimits> = {
  bodyBytes: 4096,
  discardBytes: 8192,
  jsonDepth: 6,
  objectBytes: 3000,
  labels: 2,
  annotations: 5,
  annotationBytes: 400,
  finalizers: 1,
  selectorChars: 40,
  selectorTerms: 2,
  sortKeys: 1,
  pageSize: 5,
  unpagedItems: 2,
  responseBytes: 1200,
  wsMessageBytes: 2048,
  connectionsPerAddress: 8,
};

const person = (name: string, extra: Record<string, unknown> = {}, spec: Record<string, unknown> = {}) => ({
  metadata: { name, ...extra },
  spec: { name: 'P', ...spec },
});

describe.each(STORES)('GatewayOptions.limits is enforced row by row (%s)', (kind) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(kind, { limits: SMALL });
  });
  afterAll(() => gw?.dispose());

  /** Creating `body` is refused with `status` naming `limit`, and nothing named `name` is stored. */
  async function refusedCreate(name: string, body: unknown, status: number, limit: RegExp): Promise<void> {
    const r = await call(gw, 'POST', PERSONS, typeof body === 'string' ? body : JSON.stringify(body), H);
    expect(r.status).toBe(status);
    expect(r.headers.get('content-type')).toBe('application/problem+json');
    expect(JSON.stringify(r.body)).toMatch(limit);
    expect((await call(gw, 'GET', `${PERSONS}/${name}`, undefined, H)).status).toBe(404);
  }

  it('bodyBytes: a REST body and a GraphQL body over it are 413', async () => {
    await refusedCreate('body', person('body', {}, { note: 'x'.repeat(4200) }), 413, /4096 bytes/);
    const r = await fetch(`${gw.url}/graphql`, {
      method: 'POST',
      headers: { ...H, 'content-type': 'application/json' },
      body: JSON.stringify({ query: `{ __typename }`, variables: { pad: 'x'.repeat(4200) } }),
    });
    expect(r.status).toBe(413);
    expect(await r.text()).toContain('4096 bytes');
  });

  it('discardBytes: a body declared larger is refused at once, before any of it is sent', async () => {
    const socket = connect(Number(new URL(gw.url).port), '127.0.0.1');
    try {
      const answer = new Promise<string>((resolve) => {
        socket.on('data', (d) => resolve(d.toString()));
        socket.on('close', () => resolve('(closed)'));
        socket.on('error', () => resolve('(error)'));
      });
      // 10,000 bytes are declared (over 8,192) and none sent: under the default discard limit
      // the server would wait for them (up to its request timeout).
      socket.write(`POST ${PERSONS} HTTP/1.1\r\nhost: x\r\nauthorization: ${adminAuth}\r\ncontent-type: application/json\r\ncontent-length: 10000\r\n\r\n`);
      const text = await Promise.race([answer, new Promise<string>((r) => setTimeout(() => r('(no answer)'), 5000))]);
      expect(text).toMatch(/^HTTP\/1\.1 413/);
    } finally {
      socket.destroy();
    }
  });

  it('jsonDepth: a REST body and GraphQL variables nested deeper are 400', async () => {
    const deep = (levels: number) => '{"a":'.repeat(levels) + '1' + '}'.repeat(levels);
    // {"metadata":…,"spec":{"name":"P","x":<5 deep>}} is 7 deep.
    await refusedCreate('deep', `{"metadata":{"name":"deep"},"spec":{"name":"P","x":${deep(5)}}}`, 400, /JSON nesting depth 6/);
    const query = 'mutation($p: JSON!) { peopleExampleCom_v1alpha1_patchPerson(name: "none", patch: $p) { metadata { name } } }';
    const r = await fetch(`${gw.url}/graphql`, {
      method: 'POST',
      headers: { ...H, 'content-type': 'application/json' },
      body: `{"query":${JSON.stringify(query)},"variables":{"p":${deep(7)}}}`,
    });
    const text = await r.text();
    expect(text).toContain('BAD_REQUEST');
    expect(text).toMatch(/nested more than 6 levels/);
  });

  it('objectBytes: an object larger as stored is 422', async () => {
    await refusedCreate('big', person('big', {}, { note: 'x'.repeat(3100) }), 422, /at most 3000 are allowed \(limit: object size\)/);
  });

  it('labels: more labels are 422', async () => {
    await refusedCreate('labels', person('labels', { labels: { a: '1', b: '2', c: '3' } }), 422, /limit: labels per object/);
  });

  it('annotations: more annotations are 422', async () => {
    await refusedCreate('annotations', person('annotations', { annotations: { a: '1', b: '2', c: '3', d: '4', e: '5', f: '6' } }), 422, /limit: annotations per object/);
  });

  it('annotationBytes: larger annotations are 422', async () => {
    await refusedCreate('annotation-bytes', person('annotation-bytes', { annotations: { a: 'v'.repeat(420) } }), 422, /limit: annotation size/);
  });

  it('finalizers: more finalizers are 422, on update too', async () => {
    await refusedCreate('finalizers', person('finalizers', { finalizers: ['example.com/a', 'example.com/b'] }), 422, /limit: finalizers per object/);
    expect((await call(gw, 'POST', PERSONS, person('fin-update'), H)).status).toBe(201);
    const r = await call(gw, 'PATCH', `${PERSONS}/fin-update`, { metadata: { finalizers: ['example.com/a', 'example.com/b'] } }, {
      ...H,
      'content-type': 'application/merge-patch+json',
    });
    expect(r.status).toBe(422);
    expect((await call(gw, 'GET', `${PERSONS}/fin-update`, undefined, H)).body.metadata.finalizers ?? []).toEqual([]);
  });

  it('selectorChars: longer selectors are 400', async () => {
    const r = await call(gw, 'GET', `${PERSONS}?size=1&labelSelector=k=${'v'.repeat(40)}`, undefined, H);
    expect(r.status).toBe(400);
    expect(r.body.detail).toContain('at most 40 are allowed (limit: selector length)');
  });

  it('selectorTerms: more selector terms are 400', async () => {
    const r = await call(gw, 'GET', `${PERSONS}?size=1&labelSelector=a,b,c`, undefined, H);
    expect(r.status).toBe(400);
    expect(r.body.detail).toContain('at most 2 are allowed (limit: selector terms)');
  });

  it('selectorTerms and selectorChars hold for a GraphQL connection\'s where too (BAD_REQUEST)', async () => {
    const q = (where: string) =>
      call(gw, 'POST', '/graphql', { query: `{ peopleExampleCom_v1alpha1_personsConnection(first: 1, where: ${where}) { edges { cursor } } }` }, H);
    const terms = await q('{ metadata: { labels: { matchLabels: { a: "1", b: "2", c: "3" } } } }');
    expect(terms.body.errors?.[0]?.extensions?.code, JSON.stringify(terms.body)).toBe('BAD_REQUEST');
    expect(terms.body.errors[0].message).toContain('at most 2 are allowed (limit: selector terms)');
    const chars = await q(`{ metadata: { labels: { matchLabels: { k: "${'v'.repeat(40)}" } } } }`);
    expect(chars.body.errors?.[0]?.extensions?.code, JSON.stringify(chars.body)).toBe('BAD_REQUEST');
    expect(chars.body.errors[0].message).toContain('at most 40 are allowed (limit: selector length)');
  });

  it('sortKeys: more sort keys are 400', async () => {
    const r = await call(gw, 'GET', `${PERSONS}?size=1&sort=metadata.name,asc&sort=metadata.creationTimestamp,desc`, undefined, H);
    expect(r.status).toBe(400);
    expect(r.body.detail).toContain('at most 1 are allowed (limit: sort keys)');
  });

  it('pageSize: a larger size is 400, the limit itself is served', async () => {
    const r = await call(gw, 'GET', `${PERSONS}?size=6`, undefined, H);
    expect(r.status).toBe(400);
    expect(r.body.detail).toContain('size must be at most 5');
    expect((await call(gw, 'GET', `${PERSONS}?size=5`, undefined, H)).status).toBe(200);
  });

  it('unpagedItems: an unpaged list of more items is 400 asking for size; a page works', async () => {
    for (const n of ['i1', 'i2', 'i3']) {
      expect((await call(gw, 'POST', PERSONS, person(n, { labels: { set: 'items' } }), H)).status).toBe(201);
    }
    const r = await call(gw, 'GET', `${PERSONS}?labelSelector=set=items`, undefined, H);
    expect(r.status).toBe(400);
    expect(r.body.detail).toContain('more than 2 can be listed without size (limit: unpaged list items)');
    expect(r.body.detail).toContain('at most 5');
    expect((await call(gw, 'GET', `${PERSONS}?labelSelector=set=items&size=5`, undefined, H)).body.items).toHaveLength(3);
  });

  it('responseBytes: a list of more bytes is 400 asking for fewer objects', async () => {
    for (const n of ['b1', 'b2']) {
      expect((await call(gw, 'POST', PERSONS, person(n, { labels: { set: 'bytes' } }, { note: 'n'.repeat(700) }), H)).status).toBe(201);
    }
    const r = await call(gw, 'GET', `${PERSONS}?labelSelector=set=bytes`, undefined, H);
    expect(r.status).toBe(400);
    expect(r.body.detail).toContain('exceed 1200 bytes (limit: response size)');
    expect((await call(gw, 'GET', `${PERSONS}?labelSelector=set=bytes,name=b1`, undefined, H)).status).toBe(200);
  });

  it('wsMessageBytes: a larger graphql-ws message closes the socket with 1009', async () => {
    const ws = new WebSocket(`${gw.url.replace('http', 'ws')}/graphql`, 'graphql-transport-ws', { headers: H });
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
    // Under the default (1 MiB) this message would be read and answered as a protocol error.
    ws.send(JSON.stringify({ type: 'connection_init', payload: { pad: 'x'.repeat(3000) } }));
    expect(await Promise.race([closed, new Promise((r) => setTimeout(() => r('(still open)'), 5000))])).toBe(1009);
    ws.terminate();
  });

  it('connectionsPerAddress: one connection more than the limit is refused', async () => {
    const port = Number(new URL(gw.url).port);
    const open = await Promise.all(
      Array.from({ length: 8 }, () => new Promise<ReturnType<typeof connect>>((resolve) => {
        const s = connect(port, '127.0.0.1', () => resolve(s));
      })),
    );
    try {
      await new Promise((r) => setTimeout(r, 100)); // the server has seen them all
      const extra = connect(port, '127.0.0.1');
      const text = await new Promise<string>((resolve) => {
        let t = '';
        extra.on('data', (d) => (t += d.toString()));
        extra.on('close', () => resolve(t));
        extra.on('error', () => resolve(t));
        extra.write('GET /livez HTTP/1.1\r\nhost: x\r\n\r\n');
      });
      expect(text).toMatch(/^HTTP\/1\.1 429/);
    } finally {
      for (const s of open) s.destroy();
    }
  });
});
