/**
 * Graceful shutdown (docs/API.md §10 "Shutdown"), in process on both stores: `Gateway.shutdown()`
 * stops accepting, ends every kind of watch with its own clean end (REST WebSocket close 1001
 * "server shutting down", the ndjson stream's end, graphql-ws `complete`), lets a request in
 * flight finish, and cuts one that outlives the grace period. The signals that call it are
 * tested on the real process in ./process.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { adminAuth, call, STORES, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { take } from '../graphql/helpers.js';
import { openWatch, person, PERSONS, sleep, slowCreate } from '../watch/helpers.js';

const GQL_WATCH = /* GraphQL */ `
  subscription {
    peopleExampleCom_v1alpha1_watchPersons {
      type
      object { metadata { name } }
    }
  }`;

/** An ndjson watch read line by line; `ended` resolves when the stream ends cleanly. */
async function ndjsonWatch(gw: { url: string }) {
  const res = await fetch(`${gw.url}${PERSONS}?watch=true`, { headers: { authorization: adminAuth } });
  expect(res.status).toBe(200);
  const reader = res.body!.getReader();
  const lines: any[] = [];
  let buffered = '';
  const decoder = new TextDecoder();
  const ended = (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return 'ended' as const;
      buffered += decoder.decode(value, { stream: true });
      const parts = buffered.split('\n');
      buffered = parts.pop()!;
      for (const p of parts) if (p) lines.push(JSON.parse(p));
    }
  })();
  ended.catch(() => undefined);
  return { lines, ended };
}

async function until(check: () => boolean, what: string, ms = 10_000) {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

describe.each(STORES)('graceful shutdown (%s)', (kind) => {
  let gw: TestGateway | undefined;
  afterEach(async () => {
    await gw?.close();
    gw = undefined;
  });

  it('ends every watch cleanly, refuses new connections and lets a request in flight finish', async () => {
    gw = await startTestGateway(kind);
    expect((await call(gw, 'POST', PERSONS, person('before'))).status).toBe(201);

    const rest = openWatch(gw);
    await rest.opened;
    await rest.until((e) => e.some((x) => x.type === 'ADDED'), 'the REST watch');
    const closeReason = new Promise<string>((resolve) => rest.ws.on('close', (_code, reason) => resolve(String(reason))));

    const nd = await ndjsonWatch(gw);
    await until(() => nd.lines.length > 0, 'the ndjson watch');

    // Not lazy: the connection stays open after its subscription ends, so it is the server that closes it.
    const client = createClient({
      url: `${gw.url.replace(/^http/, 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: { authorization: adminAuth },
      retryAttempts: 0,
      lazy: false,
    });
    const gqlClosed = new Promise<number>((resolve) => client.on('closed', (e) => resolve((e as { code: number }).code)));
    const subscription = client.iterate({ query: GQL_WATCH });
    // The initial ADDED, then the BOOKMARK that ends the initial events.
    expect((await take(subscription, 2)).map((r) => r.data.peopleExampleCom_v1alpha1_watchPersons.type)).toEqual(['ADDED', 'BOOKMARK']);

    const slow = slowCreate(gw, 'in-flight');
    await sleep(200); // the request is in flight: headers and half of the body arrived

    const t0 = Date.now();
    const shutdown = gw.shutdown();
    let done = false;
    void shutdown.then(() => (done = true));

    expect(await rest.closed).toBe(1001);
    expect(await closeReason).toBe('server shutting down');
    expect(await nd.ended).toBe('ended');
    // graphql-ws: the subscription completes (done, no error), then the socket closes with 1001.
    expect(await subscription.next()).toEqual({ done: true, value: undefined });
    expect(await gqlClosed).toBe(1001);

    // No new connections while the request in flight is still running.
    await expect(fetch(`${gw.url}/healthz`)).rejects.toThrow();
    expect(done).toBe(false);

    slow.finish();
    expect((await slow.response).status).toBe(201);
    await shutdown;
    expect(Date.now() - t0).toBeLessThan(10_000);
    await client.dispose();
  });

  it('cuts a request that outlives the grace period, then closes', async () => {
    gw = await startTestGateway(kind);
    const slow = slowCreate(gw, 'never-finished');
    await sleep(200);
    const t0 = Date.now();
    await gw.shutdown(500);
    const took = Date.now() - t0;
    expect(took).toBeGreaterThanOrEqual(450);
    expect(took).toBeLessThan(5000);
    await expect(slow.response).rejects.toThrow();
  });
});
