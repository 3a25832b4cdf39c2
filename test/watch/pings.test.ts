/**
 * Pings keep idle sockets alive (issue 10, resource safety): the REST WebSocket watch pings
 * every `pingMs` (the gateway's WatchHub settings) and drops a client that did not answer the previous
 * ping; graphql-ws pings on its own keep-alive (12 s, graphql-ws's default). An idle watch socket
 * outlives every HTTP idle timeout of the server (headers, request, keep-alive: they apply to
 * HTTP requests, not to an upgraded socket).
 */
import WebSocket from 'ws';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { openWatch, person, PERSONS, sleep, write } from './helpers.js';

describe('pings on watch sockets (embedded)', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    // Short HTTP timeouts: an idle watch must outlive all of them (Node checks every second here).
    gw = await startTestGateway('embedded', { limits: { headersTimeoutMs: 300, requestTimeoutMs: 400, keepAliveTimeoutMs: 200 } });
  });
  afterAll(() => gw?.dispose());
  afterEach(() => gw?.watches.configure());

  it('a REST watch socket is pinged every pingMs and, answering, stays open past the HTTP idle timeouts', async () => {
    gw.watches.configure({ pingMs: 200 });
    const w = openWatch(gw, '?labelSelector=people.example.com/ping=a');
    let pings = 0;
    w.ws.on('ping', () => pings++);
    await w.opened;
    await sleep(2500);
    expect(pings).toBeGreaterThanOrEqual(3);
    expect(w.ws.readyState).toBe(WebSocket.OPEN);
    await write(gw, 'POST', PERSONS, person('ping-a', { 'people.example.com/ping': 'a' }));
    await w.until((ev) => ev.some((e) => e.type === 'ADDED' && e.object.metadata.name === 'ping-a'), 'the event after the idle time');
    w.close();
  });

  it('an idle REST watch without pings in the interval is not closed by the HTTP timeouts', async () => {
    gw.watches.configure({ pingMs: 60_000 });
    const w = openWatch(gw, '?labelSelector=people.example.com/ping=b');
    let pings = 0;
    w.ws.on('ping', () => pings++);
    await w.opened;
    await sleep(2500);
    expect(pings).toBe(0);
    expect(w.ws.readyState).toBe(WebSocket.OPEN);
    await write(gw, 'POST', PERSONS, person('ping-b', { 'people.example.com/ping': 'b' }));
    await w.until((ev) => ev.some((e) => e.type === 'ADDED' && e.object.metadata.name === 'ping-b'), 'the event after the idle time');
    w.close();
  });

  it('a REST watch client that does not answer pings is dropped and its subscription ends', async () => {
    gw.watches.configure({ pingMs: 200 });
    await sleep(100);
    const before = gw.watches.count();
    const ws = new WebSocket(`${gw.url.replace(/^http/, 'ws')}${PERSONS}`, { headers: { authorization: adminAuth }, autoPong: false });
    let pings = 0;
    ws.on('ping', () => pings++);
    const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
    await new Promise<void>((resolve, reject) => {
      ws.on('open', () => resolve());
      ws.on('error', reject);
    });
    // Subscribed while the client still looks alive…
    const deadline = Date.now() + 5000;
    while (gw.watches.count() <= before && Date.now() < deadline) await sleep(20);
    expect(gw.watches.count()).toBe(before + 1);
    // …then terminated after a ping went unanswered (no close frame: 1006).
    const code = await Promise.race([closed, sleep(10_000).then(() => -1)]);
    expect(code).toBe(1006);
    expect(pings).toBeGreaterThanOrEqual(1);
    await sleep(100);
    expect(gw.watches.count()).toBe(before);
  });

  it('graphql-ws pings an idle subscription socket (its keep-alive) and the socket stays open', async () => {
    const ws = new WebSocket(`${gw.url.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws', { headers: { authorization: adminAuth } });
    const messages: any[] = [];
    ws.on('message', (d) => messages.push(JSON.parse(String(d))));
    const pinged = new Promise<number>((resolve) => ws.once('ping', () => resolve(Date.now())));
    await new Promise<void>((resolve, reject) => {
      ws.on('open', () => resolve());
      ws.on('error', reject);
    });
    ws.send(JSON.stringify({ type: 'connection_init', payload: {} }));
    const ackBy = Date.now() + 10_000;
    while (!messages.length && Date.now() < ackBy) await sleep(20);
    expect(messages[0]).toMatchObject({ type: 'connection_ack' });
    ws.send(
      JSON.stringify({
        id: '1',
        type: 'subscribe',
        payload: { query: 'subscription { peopleExampleCom_v1alpha1_watchPersons(labelSelector: "people.example.com/ping=c") { type } }' },
      }),
    );
    const started = Date.now();
    const at = await Promise.race([pinged, sleep(25_000).then(() => -1)]);
    expect(at).toBeGreaterThan(0);
    expect(ws.readyState).toBe(WebSocket.OPEN);
    expect(messages[0]).toMatchObject({ type: 'connection_ack' });
    expect(messages.some((m) => m.type === 'error' || m.type === 'complete')).toBe(false);
    expect(at - started).toBeLessThan(25_000);
    ws.close();
  }, 40_000);
});
