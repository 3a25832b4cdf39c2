/**
 * Watch edges of issue 22 (item 10), on every watch door (REST WebSocket, REST ndjson, GraphQL
 * subscription) and both stores:
 *  - a DELETED event carries the object's final state, `metadata.deletionTimestamp` set, whether
 *    it is removed at once, after its last finalizer, or by a deletecollection;
 *  - a `resourceVersion` that is not a position at all is a 400 (BAD_REQUEST), while a
 *    well-formed position the feed does not hold still ends the watch with ERROR 410 (GONE).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { adminAuth, call, startTestGateway, STORES, type TestGateway } from '../helpers/gateway.js';
import { take, wsClient } from '../graphql/helpers.js';
import { MERGE, openWatch, person, PERSONS, sleep, write } from './helpers.js';

const SUBSCRIBE = /* GraphQL */ `
  subscription ($f: [String!], $rv: String) {
    peopleExampleCom_v1alpha1_watchPersons(fieldSelector: $f, resourceVersion: $rv) {
      type
      resourceVersion
      object { metadata { name version deletionTimestamp finalizers } }
    }
  }`;

/** A REST `?watch=true` ndjson stream, its lines parsed as they arrive. */
function ndjson(gw: TestGateway, query: string) {
  const controller = new AbortController();
  const events: any[] = [];
  const response = fetch(`${gw.url}${PERSONS}?watch=true&${query}`, { signal: controller.signal, headers: { authorization: adminAuth } });
  const done = (async () => {
    const res = await response;
    if (res.status !== 200) return;
    const decoder = new TextDecoder();
    let buf = '';
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buf += decoder.decode(chunk, { stream: true });
        let nl: number;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl).trim();
          buf = buf.slice(nl + 1);
          if (line) events.push(JSON.parse(line));
        }
      }
    } catch {
      // aborted
    }
  })();
  return {
    response,
    events,
    done,
    async until(n: number) {
      for (let i = 0; i < 500 && events.filter((e) => e.type !== 'BOOKMARK').length < n; i++) await sleep(20);
      return events.filter((e) => e.type !== 'BOOKMARK');
    },
    close: () => controller.abort(),
  };
}

/** The same watch on all three doors; resolves once each has delivered its initial events. */
async function watchEverywhere(gw: TestGateway, name: string) {
  const ws = openWatch(gw, `?fieldSelector=name=${name}`);
  await ws.opened;
  const nd = ndjson(gw, `fieldSelector=name=${name}`);
  expect((await nd.response).status).toBe(200);
  const client = wsClient(gw, undefined, { authorization: adminAuth });
  const sub = client.iterate({ query: SUBSCRIBE, variables: { f: [`name=${name}`] } });
  // The subscription is open once the BOOKMARK ending its (empty) initial events arrived.
  const [end] = await take(sub, 1);
  expect(end.data.peopleExampleCom_v1alpha1_watchPersons.type).toBe('BOOKMARK');
  return {
    /** The first `n` change events of each door, as [REST ws, ndjson, GraphQL]. */
    async take(n: number): Promise<any[][]> {
      const fromWs = (await ws.until((ev) => ev.filter((e) => e.type !== 'BOOKMARK').length >= n, `${n} events`)).filter((e) => e.type !== 'BOOKMARK');
      const fromNd = await nd.until(n);
      const fromGql = (await take(sub, n)).map((r) => r.data.peopleExampleCom_v1alpha1_watchPersons);
      return [fromWs.slice(0, n), fromNd.slice(0, n), fromGql];
    },
    async close() {
      ws.close();
      nd.close();
      await sub.return?.();
      await client.dispose();
    },
  };
}

describe.each(STORES)('watch edges (%s)', (kind) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(kind);
  });
  afterAll(() => gw?.dispose());

  it('DELETED carries the final state with deletionTimestamp on every door (removed at once)', async () => {
    const name = `fin-now-${kind}`;
    const doors = await watchEverywhere(gw, name);
    try {
      const created = await write(gw, 'POST', PERSONS, person(name));
      const deleted = await write(gw, 'DELETE', `${PERSONS}/${name}`);
      expect(deleted.metadata.deletionTimestamp).toEqual(expect.any(String));
      for (const events of await doors.take(2)) {
        expect(events.map((e) => e.type)).toEqual(['ADDED', 'DELETED']);
        const last = events[1].object.metadata;
        expect(last.deletionTimestamp).toBe(deleted.metadata.deletionTimestamp);
        expect(last.version).toBe(created.metadata.version + 1);
        expect(last.version).toBe(deleted.metadata.version);
      }
    } finally {
      await doors.close();
    }
  });

  it('an object with finalizers: MODIFIED when marked, DELETED with the final state when the last finalizer goes', async () => {
    const name = `fin-later-${kind}`;
    const doors = await watchEverywhere(gw, name);
    try {
      await write(gw, 'POST', PERSONS, { ...person(name), metadata: { name, finalizers: ['people.example.com/hold'] } });
      const marked = await write(gw, 'DELETE', `${PERSONS}/${name}`);
      expect(marked.metadata.deletionTimestamp).toEqual(expect.any(String));
      await write(gw, 'PATCH', `${PERSONS}/${name}`, { metadata: { finalizers: null } }, MERGE);
      expect((await call(gw, 'GET', `${PERSONS}/${name}`)).status).toBe(404);
      for (const events of await doors.take(3)) {
        expect(events.map((e) => e.type)).toEqual(['ADDED', 'MODIFIED', 'DELETED']);
        expect(events[1].object.metadata.deletionTimestamp).toBe(marked.metadata.deletionTimestamp);
        const last = events[2].object.metadata;
        expect(last.deletionTimestamp).toBe(marked.metadata.deletionTimestamp);
        expect(last.finalizers ?? []).toEqual([]);
        expect(last.version).toBe(marked.metadata.version + 1);
      }
    } finally {
      await doors.close();
    }
  });

  it('deletecollection: each DELETED carries deletionTimestamp', async () => {
    const name = `fin-coll-${kind}`;
    const doors = await watchEverywhere(gw, name);
    try {
      await write(gw, 'POST', PERSONS, person(name));
      const list = await write(gw, 'DELETE', `${PERSONS}?fieldSelector=name=${name}`);
      expect(list.items).toHaveLength(1);
      for (const events of await doors.take(2)) {
        expect(events.map((e) => e.type)).toEqual(['ADDED', 'DELETED']);
        expect(events[1].object.metadata.deletionTimestamp).toBe(list.items[0].metadata.deletionTimestamp);
      }
    } finally {
      await doors.close();
    }
  });

  it('resourceVersion that is not a position: 400 problem+json on REST (WebSocket and ndjson), BAD_REQUEST on GraphQL', async () => {
    const ws = new WebSocket(`${gw.url.replace(/^http/, 'ws')}${PERSONS}?resourceVersion=abc`, { headers: { authorization: adminAuth } });
    const refused = await new Promise<{ status: number; type: string; body: string }>((resolve, reject) => {
      ws.on('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), body }));
      });
      ws.on('open', () => reject(new Error('upgraded')));
      ws.on('error', () => undefined);
    });
    expect(refused.status).toBe(400);
    expect(refused.type).toContain('application/problem+json');
    expect(JSON.parse(refused.body)).toMatchObject({ status: 400, detail: expect.stringContaining('resourceVersion "abc"') });

    for (const rv of ['abc', '-1', '12x', '1.5']) {
      const r = await call(gw, 'GET', `${PERSONS}?watch=true&resourceVersion=${encodeURIComponent(rv)}`);
      expect(r.status, rv).toBe(400);
      expect(r.headers.get('content-type')).toContain('application/problem+json');
    }

    const client = wsClient(gw, undefined, { authorization: adminAuth });
    try {
      const results = await take(client.iterate({ query: SUBSCRIBE, variables: { rv: 'abc' } }), 2, 3000);
      expect(results).toHaveLength(1);
      expect(results[0].errors.map((e: any) => e.extensions.code)).toEqual(['BAD_REQUEST']);
    } finally {
      await client.dispose();
    }
  });

  it('a well-formed position the feed does not hold still ends with ERROR 410 / GONE', async () => {
    const rv = '99999999999';
    const ws = openWatch(gw, `?resourceVersion=${rv}`);
    await ws.opened;
    const [err] = await ws.until((ev) => ev.length >= 1, 'the ERROR event');
    expect(err).toMatchObject({ type: 'ERROR', object: { code: 410 } });
    await ws.closed;

    const nd = ndjson(gw, `resourceVersion=${rv}`);
    expect((await nd.response).status).toBe(200);
    await nd.done;
    expect(nd.events.filter((e) => e.type !== 'BOOKMARK')).toEqual([expect.objectContaining({ type: 'ERROR', object: expect.objectContaining({ code: 410 }) })]);

    const client = wsClient(gw, undefined, { authorization: adminAuth });
    try {
      const results = await take(client.iterate({ query: SUBSCRIBE, variables: { rv } }), 2, 3000);
      expect(results).toHaveLength(1);
      expect(results[0].errors.map((e: any) => e.extensions.code)).toEqual(['GONE']);
    } finally {
      await client.dispose();
    }
  });
});
