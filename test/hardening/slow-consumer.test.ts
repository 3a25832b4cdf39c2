/**
 * Slow watch consumers (issue 11 finding 4, transport part), on a gateway in its own process
 * (embedded store) so its RSS can be read: one REST WebSocket watcher and one graphql-ws
 * subscriber that never read, while 2,000 objects of ~32 KiB are written. Both are cut off
 * (REST: ERROR 503 and close, buffered bytes over 8 MiB or over 1 MiB for 1 s; graphql-ws:
 * close 4503 once its sends made no progress for 5 s), a reading REST watcher and a reading
 * graphql-ws subscriber get every event, other requests keep being answered, and the gateway's
 * RSS comes back near its baseline. Before the graphql-ws guard, a subscriber that did not read
 * stalled with up to 1,000 queued events and its socket was never closed.
 */
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { adminAuth } from '../helpers/gateway.js';
import { spawnGateway, tempDir, type GatewayProcess } from './processes.js';

const PERSONS = '/apis/people.example.com/v1alpha1/persons';
const WRITES = 2000;
const WRITERS = 4;
const BLOB = 'x'.repeat(32 * 1024);
const MiB = 1024 * 1024;
const SUBSCRIPTION =
  'subscription { peopleExampleCom_v1alpha1_watchPersons(labelSelector: ["people.example.com/run=slow"]) { type resourceVersion object { metadata { name annotations } } } }';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function rssOf(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
}

interface Watcher {
  ws: WebSocket;
  events: number;
  closed: Promise<{ code: number; at: number }>;
}

function restWatcher(gw: GatewayProcess, read: boolean): Promise<Watcher> {
  const ws = new WebSocket(`${gw.url.replace(/^http/, 'ws')}${PERSONS}?labelSelector=people.example.com/run=slow`, {
    headers: { authorization: adminAuth },
  });
  const w: Watcher = { ws, events: 0, closed: new Promise((r) => ws.on('close', (code) => r({ code, at: Date.now() }))) };
  ws.on('error', () => undefined);
  ws.on('message', (data) => {
    if ((JSON.parse(String(data)) as { type: string }).type === 'ADDED') w.events++;
  });
  return new Promise((resolve, reject) => {
    ws.once('open', () => {
      // `_socket`: the client's TCP socket; paused, the client takes nothing more from it.
      if (!read) (ws as unknown as { _socket: { pause(): void } })._socket.pause();
      resolve(w);
    });
    ws.once('error', reject);
  });
}

function graphqlWatcher(gw: GatewayProcess, read: boolean): Promise<Watcher> {
  const ws = new WebSocket(`${gw.url.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws');
  const w: Watcher = { ws, events: 0, closed: new Promise((r) => ws.on('close', (code) => r({ code, at: Date.now() }))) };
  ws.on('error', () => undefined);
  return new Promise((resolve, reject) => {
    ws.once('error', reject);
    ws.once('open', () => ws.send(JSON.stringify({ type: 'connection_init', payload: { authorization: adminAuth } })));
    ws.on('message', (data) => {
      const m = JSON.parse(String(data)) as { type: string; payload?: { data?: { peopleExampleCom_v1alpha1_watchPersons?: { type: string } } } };
      if (m.type === 'connection_ack') {
        ws.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: SUBSCRIPTION } }));
        // The subscription is set up before the first write (the test waits a moment too).
        setTimeout(() => {
          if (!read) (ws as unknown as { _socket: { pause(): void } })._socket.pause();
          resolve(w);
        }, 200);
      }
      if (m.type === 'next' && m.payload?.data?.peopleExampleCom_v1alpha1_watchPersons?.type === 'ADDED') w.events++;
    });
  });
}

async function create(gw: GatewayProcess, name: string): Promise<number> {
  const r = await fetch(`${gw.url}${PERSONS}`, {
    method: 'POST',
    headers: { authorization: adminAuth, 'content-type': 'application/json' },
    body: JSON.stringify({
      metadata: { name, labels: { 'people.example.com/run': 'slow' }, annotations: { 'people.example.com/blob': BLOB } },
      spec: { name: 'Slow' },
    }),
  });
  await r.arrayBuffer();
  return r.status;
}

describe('slow watch consumers (own gateway process, embedded store)', () => {
  let gw: GatewayProcess;
  beforeAll(async () => {
    gw = await spawnGateway({ SVC_DATA_DIR: await tempDir() });
  }, 120_000);
  afterAll(async () => {
    await gw?.kill();
  });

  it(`a REST watcher and a graphql-ws subscriber that never read are cut off during ${WRITES} writes of ~32 KiB; others are served; RSS returns near baseline`, async () => {
    const pid = gw.child.pid!;
    // Warm-up with reading watchers, so the baseline includes what any watch traffic allocates.
    {
      const warm = await Promise.all([restWatcher(gw, true), graphqlWatcher(gw, true)]);
      for (let i = 0; i < 100; i++) expect(await create(gw, `warm-${i}`)).toBe(201);
      await sleep(1000);
      for (const w of warm) w.ws.close();
    }
    await sleep(2000);
    const baseline = await rssOf(pid);

    const [slowRest, slowGql] = await Promise.all([restWatcher(gw, false), graphqlWatcher(gw, false)]);
    const [fastRest, fastGql] = await Promise.all([restWatcher(gw, true), graphqlWatcher(gw, true)]);
    let peak = baseline;
    const sampler = setInterval(() => void rssOf(pid).then((r) => (peak = Math.max(peak, r)), () => undefined), 200);

    // Other clients: a plain GET every 200 ms while the writes run.
    const reads: number[] = [];
    let writing = true;
    const reader = (async () => {
      while (writing) {
        const r = await fetch(`${gw.url}${PERSONS}?size=1`, { headers: { authorization: adminAuth } });
        await r.arrayBuffer();
        reads.push(r.status);
        await sleep(200);
      }
    })();

    const started = Date.now();
    const statuses: number[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: WRITERS }, async () => {
        while (next < WRITES) statuses.push(await create(gw, `slow-${next++}`));
      }),
    );
    writing = false;
    await reader;
    const wrote = Date.now() - started;

    // The reading watchers get everything.
    const deadline = Date.now() + 60_000;
    while ((fastRest.events < WRITES + 100 || fastGql.events < WRITES + 100) && Date.now() < deadline) await sleep(200);

    // The slow ones were cut off by the gateway; once they read again they see the end.
    for (const w of [slowRest, slowGql]) (w.ws as unknown as { _socket: { resume(): void } })._socket.resume();
    const [restEnd, gqlEnd] = await Promise.all([slowRest.closed, slowGql.closed].map((p) => Promise.race([p, sleep(30_000).then(() => undefined)])));
    await sleep(3000);
    clearInterval(sampler);
    const after = await rssOf(pid);
    for (const w of [fastRest, fastGql]) w.ws.close();

    console.log(
      `[figure] slow consumers: ${WRITES} writes of ~32 KiB in ${wrote} ms (${statuses.filter((s) => s === 201).length} × 201); ` +
        `never-reading REST watcher closed (code ${restEnd?.code}) after ${slowRest.events} events, graphql-ws subscriber closed (code ${gqlEnd?.code}) after ${slowGql.events}; ` +
        `reading watchers got ${fastRest.events - 100}/${WRITES} (REST) and ${fastGql.events - 100}/${WRITES} (graphql-ws); ` +
        `${reads.length} other reads, ${reads.filter((s) => s === 200).length} × 200; ` +
        `gateway RSS baseline ${(baseline / MiB).toFixed(0)} MiB, peak ${(peak / MiB).toFixed(0)} MiB, after ${(after / MiB).toFixed(0)} MiB`,
    );
    expect(statuses.filter((s) => s !== 201)).toEqual([]);
    expect(reads.length).toBeGreaterThan(0);
    expect(reads.every((s) => s === 200)).toBe(true);
    // Each stream starts with ADDED for the 100 warm-up objects (no resourceVersion given).
    expect(fastRest.events).toBe(WRITES + 100);
    expect(fastGql.events).toBe(WRITES + 100);
    // Cut off: closed by the gateway, long before all events were delivered.
    expect(restEnd).toBeDefined();
    expect(gqlEnd).toBeDefined();
    expect(slowRest.events).toBeLessThan(WRITES);
    expect(slowGql.events).toBeLessThan(WRITES);
    expect(gqlEnd!.code === 4503 || gqlEnd!.code === 1006).toBe(true);
    // Memory: back near the baseline (the slow consumers' buffers and queues are released).
    expect(after - baseline).toBeLessThan(64 * MiB);
  }, 300_000);
});
