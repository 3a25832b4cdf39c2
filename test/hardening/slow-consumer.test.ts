/**
 * Slow consumers and slowloris clients (issue 11 finding 4 and "tests that print figures"), on a
 * gateway in its own process so its RSS can be read from /proc, on each store.
 *
 * During a run of large creates (4 writers; 2,000 × 32 KiB embedded, fewer and larger on FerretDB)
 * with a GET of one object every 200 ms on the side:
 *  - three clients that never read: a REST WebSocket watcher and a graphql-ws subscriber (their
 *    TCP sockets paused with `ws.pause()`, which ws does not undo; `_socket.pause()` alone is
 *    undone by ws's receiver on its next 'drain'), and a REST `?watch=true` ndjson response whose
 *    body is never read;
 *  - three that read: one of each kind, which must get every event;
 *  - slowloris clients sending a request body at 1 byte/s (embedded run), cut with 408 within the
 *    request deadline. The byte-exact 408 problem and the headers-only variant are in
 *    connections.test.ts; here they run against the same loaded process whose memory is measured.
 *
 * The gateway's end of each never-reading connection must leave ESTABLISHED (read from
 * /proc/net/tcp: the client is not reading, so it cannot see the close itself) within the
 * transport's limits — REST: unsent data over 1 MiB for 1 s or over 8 MiB → ERROR 503 and close;
 * graphql-ws: sends without progress for 5 s (or over 8 MiB buffered) → close 4503 — and the
 * gateway's memory must come back near its baseline: after a full collection (forced through the
 * inspector the gateway runs with here), its RSS within 64 MiB and its JS heap + external memory
 * within 16 MiB of the same measures before the clients came. Before the graphql-ws guard a
 * never-reading subscriber kept up to 1,000 queued events and its socket until graphql-ws's
 * keep-alive dropped it, and a REST watcher that never read grew the RSS by 134 MiB for good.
 */
import { request, type IncomingMessage } from 'node:http';
import { connect, type Socket } from 'node:net';
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { adminAuth, freshMongoUrl, startTestGateway, type StoreKind, type TestGateway } from '../helpers/gateway.js';
import { freePort, spawnGateway, tempDir, type GatewayProcess } from './processes.js';

const PERSONS = '/apis/people.example.com/v1alpha1/persons';
const LABEL = 'people.example.com/run';
const WRITERS = 4;
const MiB = 1024 * 1024;
/** Limits of the spawned gateway for the slowloris clients (defaults 30 s / 10 s). */
const REQUEST_TIMEOUT_MS = 4000;
const HEADERS_TIMEOUT_MS = 3000;
/** The transports' own deadlines: REST stall 1 s (over 1 MiB), graphql-ws no progress for 5 s. */
const GRAPHQL_DRAIN_MS = 5000;
/** RSS after a full GC ≤ baseline + this (the old code grew by 134 MiB and kept it). */
const RSS_MARGIN = 64 * MiB;
/** JS heap + external memory after a full GC ≤ the same at the baseline + this. */
const HEAP_MARGIN = 16 * MiB;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const mib = (n: number) => (n / MiB).toFixed(0);

async function rssOf(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
}

/**
 * State of the gateway's end of the TCP connection from `clientPort` ('01' = ESTABLISHED), from
 * /proc/net/tcp; undefined once the kernel forgot it.
 */
async function serverSideState(gatewayPort: number, clientPort: number): Promise<string | undefined> {
  const hex = (p: number) => p.toString(16).toUpperCase().padStart(4, '0');
  const table = await readFile('/proc/net/tcp', 'utf8');
  for (const line of table.split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 4) continue;
    if (f[1]!.endsWith(`:${hex(gatewayPort)}`) && f[2]!.endsWith(`:${hex(clientPort)}`)) return f[3];
  }
  return undefined;
}

/**
 * The gateway's own view of its memory through the Node.js inspector (the gateway runs with
 * `--inspect` on a loopback port in this test): a full garbage collection, then
 * `process.memoryUsage()`. Separates memory still referenced from memory V8 or the allocator
 * has not handed back to the system yet (the RSS).
 */
async function collectedMemory(inspectPort: number): Promise<{ rss: number; heapUsed: number; external: number }> {
  const [target] = (await (await fetch(`http://127.0.0.1:${inspectPort}/json/list`)).json()) as { webSocketDebuggerUrl: string }[];
  const ws = new WebSocket(target!.webSocketDebuggerUrl);
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  let id = 0;
  const call = (method: string, params: object = {}) =>
    new Promise<{ result?: { result?: { value?: string } } }>((resolve, reject) => {
      const mine = ++id;
      const onMessage = (data: WebSocket.RawData) => {
        const m = JSON.parse(String(data)) as { id?: number; error?: unknown };
        if (m.id !== mine) return;
        ws.off('message', onMessage);
        if (m.error) reject(new Error(JSON.stringify(m.error)));
        else resolve(m as never);
      };
      ws.on('message', onMessage);
      ws.send(JSON.stringify({ id: mine, method, params }));
    });
  try {
    await call('HeapProfiler.collectGarbage');
    await sleep(500);
    await call('HeapProfiler.collectGarbage');
    const r = await call('Runtime.evaluate', { expression: 'JSON.stringify(process.memoryUsage())', returnByValue: true });
    return JSON.parse(r.result!.result!.value!) as { rss: number; heapUsed: number; external: number };
  } finally {
    ws.close();
  }
}

interface Client {
  kind: string;
  /** ADDED events received (the never-reading ones stop counting when paused). */
  events: number;
  /** The client's local port (to find the gateway's end in /proc/net/tcp). */
  port: number;
  /** Closed, as the client sees it (a never-reading client sees it only once it reads again). */
  closed: Promise<{ code?: number; at: number }>;
  /** Stops reading (TCP socket paused, never resumed by the library). */
  pause(): void;
  /** Reads again. */
  resume(): void;
  close(): void;
}

const wsUrl = (gw: GatewayProcess, path: string) => `${gw.url.replace(/^http/, 'ws')}${path}`;
const portOf = (ws: WebSocket) => (ws as unknown as { _socket: Socket })._socket.localPort!;

/** The Client record of a `ws` socket (errors are seen through its close). */
function socketClient(kind: Client['kind'], ws: WebSocket): Client {
  ws.on('error', () => undefined);
  return {
    kind,
    events: 0,
    port: 0,
    closed: new Promise((r) => ws.on('close', (code) => r({ code, at: Date.now() }))),
    pause: () => ws.pause(),
    resume: () => ws.resume(),
    close: () => ws.terminate(),
  };
}

/** REST WebSocket watcher; resolves once the initial ADDED events for the warm-up objects arrived. */
function restWebSocket(gw: GatewayProcess, ready: number): Promise<Client> {
  const ws = new WebSocket(wsUrl(gw, `${PERSONS}?labelSelector=${LABEL}=slow`), { headers: { authorization: adminAuth } });
  const c = socketClient('REST WebSocket', ws);
  return new Promise((resolve, reject) => {
    ws.once('error', reject);
    ws.once('open', () => (c.port = portOf(ws)));
    ws.on('message', (data) => {
      if ((JSON.parse(String(data)) as { type: string }).type === 'ADDED' && ++c.events === ready) resolve(c);
    });
  });
}

const SUBSCRIPTION = `subscription { peopleExampleCom_v1alpha1_watchPersons(labelSelector: ["${LABEL}=slow"]) { type resourceVersion object { metadata { name annotations } } } }`;

/** graphql-ws subscriber (graphql-transport-ws); resolves once `ready` ADDED events arrived (0: once subscribed). */
function graphqlWs(gw: GatewayProcess, ready: number): Promise<Client> {
  const ws = new WebSocket(wsUrl(gw, '/graphql'), 'graphql-transport-ws');
  const c = socketClient('graphql-ws', ws);
  return new Promise((resolve, reject) => {
    ws.once('error', reject);
    ws.once('open', () => {
      c.port = portOf(ws);
      ws.send(JSON.stringify({ type: 'connection_init', payload: { authorization: adminAuth } }));
    });
    ws.on('message', (data) => {
      const m = JSON.parse(String(data)) as { type: string; payload?: { data?: { peopleExampleCom_v1alpha1_watchPersons?: { type: string } } } };
      if (m.type === 'connection_ack') {
        ws.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: SUBSCRIPTION } }));
        if (ready === 0) resolve(c);
      }
      if (m.type === 'next' && m.payload?.data?.peopleExampleCom_v1alpha1_watchPersons?.type === 'ADDED' && ++c.events === ready) resolve(c);
      if (m.type === 'error') reject(new Error(JSON.stringify(m.payload)));
    });
  });
}

/**
 * REST ndjson watch (`?watch=true`) on a connection of its own (`agent: false`). Reading: lines
 * are counted; not reading: the response is never consumed, so Node's HTTP client stops reading
 * the socket once its small buffer is full (the same as a fetch body never read). Resolves once
 * the headers arrived (the gateway sends them at once).
 */
function ndjson(gw: GatewayProcess, read: boolean): Promise<Client> {
  const url = new URL(`${gw.url}${PERSONS}?watch=true&labelSelector=${LABEL}=slow`);
  return new Promise((resolve, reject) => {
    let res: IncomingMessage | undefined;
    let markClosed!: (v: { code?: number; at: number }) => void;
    const c: Client = {
      kind: 'REST ndjson',
      events: 0,
      port: 0,
      closed: new Promise((r) => (markClosed = r)),
      pause: () => undefined, // never consumed: nothing to pause
      resume: () => res?.resume(),
      close: () => req.destroy(),
    };
    const req = request(url, { agent: false, headers: { authorization: adminAuth } }, (r) => {
      res = r;
      c.port = r.socket.localPort!;
      r.on('close', () => markClosed({ code: r.statusCode, at: Date.now() }));
      r.on('error', () => undefined);
      if (read) {
        let rest = '';
        r.setEncoding('utf8');
        r.on('data', (chunk: string) => {
          rest += chunk;
          let nl;
          while ((nl = rest.indexOf('\n')) >= 0) {
            if ((JSON.parse(rest.slice(0, nl)) as { type: string }).type === 'ADDED') c.events++;
            rest = rest.slice(nl + 1);
          }
        });
      }
      if (r.statusCode === 200) resolve(c);
      else reject(new Error(`ndjson watch: ${r.statusCode}`));
    });
    req.on('error', (e) => (res ? undefined : reject(e)));
    req.end();
  });
}

/** A request body sent at 1 byte/s; resolves with what came back and when the connection closed. */
function slowloris(gw: GatewayProcess): Promise<{ status: number; at: number }> {
  const url = new URL(gw.url);
  const socket = connect(Number(url.port), url.hostname);
  let data = '';
  socket.on('data', (d) => (data += d.toString('latin1')));
  socket.on('error', () => undefined);
  socket.write(`POST ${PERSONS} HTTP/1.1\r\nHost: x\r\nAuthorization: ${adminAuth}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{`);
  const drip = setInterval(() => socket.writable && socket.write(' '), 1000);
  return new Promise((resolve) =>
    socket.on('close', () => {
      clearInterval(drip);
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(data)?.[1] ?? 0), at: Date.now() });
    }),
  );
}

async function create(gw: GatewayProcess, name: string, blob: string): Promise<number> {
  const r = await fetch(`${gw.url}${PERSONS}`, {
    method: 'POST',
    headers: { authorization: adminAuth, 'content-type': 'application/json' },
    body: JSON.stringify({
      metadata: { name, labels: { [LABEL]: 'slow' }, annotations: { 'people.example.com/blob': blob } },
      spec: { name: 'Slow' },
    }),
  });
  await r.arrayBuffer();
  return r.status;
}

async function until(check: () => boolean | Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await sleep(200);
  }
  return check();
}

const runs: { store: StoreKind; warm: number; writes: number; kib: number; slowloris: number; timeoutMs: number }[] = [
  { store: 'embedded', warm: 100, writes: 2000, kib: 32, slowloris: 20, timeoutMs: 400_000 },
  // FerretDB takes a few creates per second on a loaded machine: fewer, larger writes (24 MiB,
  // still far more than the loopback socket buffers hold).
  { store: 'mongodb', warm: 20, writes: 150, kib: 160, slowloris: 0, timeoutMs: 600_000 },
];

describe.each(runs)('slow consumers and slowloris ($store store, gateway in its own process)', ({ store, warm: WARM, writes, kib, slowloris: lorisCount, timeoutMs }) => {
  const blob = 'x'.repeat(kib * 1024);
  let gw: GatewayProcess;
  let inspectPort: number;
  beforeAll(async () => {
    inspectPort = await freePort();
    gw = await spawnGateway({
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --inspect=127.0.0.1:${inspectPort}`.trim(),
      ...(store === 'mongodb' ? { MONGODB_URL: freshMongoUrl() } : { SVC_DATA_DIR: await tempDir() }),
      SVC_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
      SVC_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
      // FerretDB on a loaded 2-core machine can take seconds per write; this test is not about
      // the store deadline (outage.test.ts is).
      ...(store === 'mongodb' ? { SVC_STORE_TIMEOUT_MS: '30000' } : {}),
    });
  }, 120_000);
  afterAll(async () => {
    await gw?.kill();
  });

  it(`never-reading watchers are cut within their limits during ${writes} writes of ~${kib} KiB, readers get every event, RSS returns near baseline`, async () => {
    const pid = gw.child.pid!;
    const gatewayPort = Number(new URL(gw.url).port);

    // Warm-up with reading clients of every kind, so the baseline includes what watch traffic
    // allocates once (schema, JIT, buffers); the objects are the initial ADDED of every watch.
    {
      for (let i = 0; i < WARM / 2; i++) expect(await create(gw, `warm-${i}`, blob)).toBe(201);
      const warm = await Promise.all([restWebSocket(gw, WARM / 2), ndjson(gw, true), graphqlWs(gw, WARM / 2)]);
      for (let i = WARM / 2; i < WARM; i++) expect(await create(gw, `warm-${i}`, blob)).toBe(201);
      expect(await until(() => warm.every((w) => w.events >= WARM), 30_000)).toBe(true);
      for (const w of warm) w.close();
    }
    await sleep(3000);
    const baseline = await rssOf(pid);
    const baseHeap = await collectedMemory(inspectPort);

    // Never-reading clients: each pauses once it has the initial events (its watch is running).
    const slow = await Promise.all([restWebSocket(gw, WARM), ndjson(gw, false), graphqlWs(gw, WARM)]);
    for (const s of slow) s.pause();
    const fast = await Promise.all([restWebSocket(gw, WARM), ndjson(gw, true), graphqlWs(gw, WARM)]);

    let peak = baseline;
    const sampler = setInterval(() => void rssOf(pid).then((r) => (peak = Math.max(peak, r)), () => undefined), 200);
    const started = Date.now();

    // When the gateway let go of each never-reading connection.
    const cutAt: (number | undefined)[] = slow.map(() => undefined);
    let watching = true;
    const monitor = (async () => {
      while (watching && cutAt.some((t) => t === undefined)) {
        for (const [i, s] of slow.entries()) {
          if (cutAt[i] === undefined && (await serverSideState(gatewayPort, s.port)) !== '01') cutAt[i] = Date.now();
        }
        await sleep(100);
      }
    })();

    // Other clients: a GET of one object every 200 ms (by name: FerretDB scans whole collections
    // for lists), and slowloris bodies.
    const reads: number[] = [];
    let writing = true;
    const reader = (async () => {
      while (writing) {
        const r = await fetch(`${gw.url}${PERSONS}/warm-0`, { headers: { authorization: adminAuth } });
        await r.arrayBuffer();
        reads.push(r.status);
        await sleep(200);
      }
    })();
    const loris = Array.from({ length: lorisCount }, () => slowloris(gw));

    const statuses: number[] = [];
    let next = 0;
    // SLOW_PROGRESS=1 prints where a slow run stands every 5 s.
    const progress = process.env.SLOW_PROGRESS ? setInterval(() => console.error(`[progress] ${Date.now() - started} ms: ${next} writes, fast ${fast.map((f) => f.events).join('/')}, cut ${cutAt.map((t) => (t ? t - started : '-')).join('/')}`), 5000) : undefined;
    await Promise.all(
      Array.from({ length: WRITERS }, async () => {
        while (next < writes) statuses.push(await create(gw, `slow-${next++}`, blob));
      }),
    );
    const wrote = Date.now() - started;
    clearInterval(progress);
    writing = false;
    await reader;
    const lorisEnds = await Promise.all(loris);

    // The reading clients get every event; the gateway lets go of the never-reading ones
    // within their deadline after the last write (plus generous slack for a loaded machine).
    await until(() => fast.every((f) => f.events >= WARM + writes), 60_000);
    await until(() => cutAt.every((t) => t !== undefined), Math.max(0, wrote + GRAPHQL_DRAIN_MS + 30_000 - (Date.now() - started)));
    watching = false;
    await monitor;

    // Memory: the RSS a few seconds later (V8 and the allocator give memory back lazily, so this
    // is a figure only), then what is still referenced: a full collection in the gateway, its
    // JS heap and external memory (the never-reading clients' buffers and queues must be gone),
    // and its RSS after that collection.
    await sleep(3000);
    const after = await rssOf(pid);
    clearInterval(sampler);
    const heap = await collectedMemory(inspectPort);

    // Reading again, the never-reading clients find their connection closed.
    for (const s of slow) s.resume();
    const seen = await Promise.all(slow.map((s) => Promise.race([s.closed, sleep(20_000).then(() => undefined)])));
    for (const c of [...fast, ...slow]) c.close();

    const cut = (i: number) => (cutAt[i] === undefined ? 'not cut' : `cut ${cutAt[i]! - started} ms after the first write`);
    console.log(
      `[figure] slow consumers (${store}): ${writes} writes of ~${kib} KiB in ${wrote} ms (${statuses.filter((s) => s === 201).length} × 201); ` +
        slow.map((s, i) => `never-reading ${s.kind}: ${cut(i)}, ${seen[i] ? (s.kind === 'REST ndjson' ? 'end' : `close ${seen[i]!.code}`) : 'no close'} seen once it read again`).join('; ') +
        `; reading clients got ${fast.map((f) => `${f.events - WARM}/${writes} (${f.kind})`).join(', ')}; ` +
        `${reads.length} other GETs, ${reads.filter((s) => s === 200).length} × 200; ` +
        `gateway RSS baseline ${mib(baseline)} MiB, peak ${mib(peak)} MiB, 3 s after the readers were done ${mib(after)} MiB, ` +
        `after a full GC ${mib(heap.rss)} MiB; JS heap used after a full GC ${mib(baseHeap.heapUsed)} → ${mib(heap.heapUsed)} MiB, external ${mib(baseHeap.external)} → ${mib(heap.external)} MiB`,
    );
    if (lorisCount > 0) {
      const took = lorisEnds.map((l) => l.at - started);
      console.log(
        `[figure] slowloris under load (${store}): ${lorisCount} bodies at 1 B/s, ${lorisEnds.filter((l) => l.status === 408).length} × 408, ` +
          `closed after ${Math.min(...took)}–${Math.max(...took)} ms (request deadline ${REQUEST_TIMEOUT_MS} ms)`,
      );
    }

    expect(statuses.filter((s) => s !== 201)).toEqual([]);
    expect(reads.length).toBeGreaterThan(0);
    expect(reads.filter((s) => s !== 200)).toEqual([]);
    for (const f of fast) expect({ kind: f.kind, events: f.events }).toEqual({ kind: f.kind, events: WARM + writes });
    for (const [i, s] of slow.entries()) {
      expect({ kind: s.kind, cut: cutAt[i] !== undefined }).toEqual({ kind: s.kind, cut: true });
      expect({ kind: s.kind, closed: seen[i] !== undefined }).toEqual({ kind: s.kind, closed: true });
      // Cut off, not served: far from every event (the ndjson one never read any).
      expect(s.events).toBeLessThan(WARM + writes);
    }
    for (const l of lorisEnds) {
      expect(l.status).toBe(408);
      expect(l.at - started).toBeLessThan(REQUEST_TIMEOUT_MS + 15_000);
    }
    expect(heap.rss - baseline).toBeLessThanOrEqual(RSS_MARGIN);
    expect(heap.heapUsed + heap.external - (baseHeap.heapUsed + baseHeap.external)).toBeLessThanOrEqual(HEAP_MARGIN);
  }, timeoutMs);
});

/**
 * The graphql-ws guard alone, in process, with short settings: a subscriber that stops reading is
 * closed 4503 once its sends made no progress for `drainMs` (it sees the close frame when it
 * reads again before the socket is terminated), its subscription ends, and another subscriber
 * gets every event. Without the guard the paused subscriber would stay subscribed with up to
 * 1,000 queued events and, reading again, would get them all and stay open.
 */
describe('graphql-ws send guard (in process)', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway('embedded');
  });
  afterAll(async () => {
    gw?.watches.configureSendGuard();
    await gw?.dispose();
  });

  it('a subscriber whose sends stall is closed 4503 and unsubscribed; another subscriber gets every event', async () => {
    gw.watches.configureSendGuard({ drainMs: 300, terminateMs: 60_000 });
    const before = gw.watches.count();
    const asProcess = { url: gw.url } as GatewayProcess;
    const [slow, fast] = await Promise.all([graphqlWs(asProcess, 0), graphqlWs(asProcess, 0)]);
    expect(await until(() => gw.watches.count() === before + 2, 10_000)).toBe(true);
    slow.pause();
    // ~200 KiB per object (the annotation limit is 256 KiB): 50 fill the paused socket's
    // loopback buffers (~8 MiB here) and leave sends waiting.
    const annotations = { 'people.example.com/blob': 'y'.repeat(200 * 1024) };
    const N = 150;
    for (let i = 0; i < N; i++) {
      const r = await fetch(`${gw.url}${PERSONS}`, {
        method: 'POST',
        headers: { authorization: adminAuth, 'content-type': 'application/json' },
        body: JSON.stringify({ metadata: { name: `g-${i}`, labels: { [LABEL]: 'slow' }, annotations }, spec: { name: 'G' } }),
      });
      await r.arrayBuffer();
      expect(r.status).toBe(201);
    }
    expect(await until(() => fast.events >= N, 30_000)).toBe(true);
    // The last send stalled at the latest with the last write; give the 300 ms clock ample time.
    await sleep(4000);
    const received = slow.events;
    slow.resume();
    const end = await Promise.race([slow.closed, sleep(20_000).then(() => undefined)]);
    expect(end?.code).toBe(4503);
    expect(slow.events).toBeLessThan(N);
    expect(received).toBeLessThan(N);
    expect(await until(() => gw.watches.count() === before + 1, 10_000)).toBe(true);
    expect(fast.events).toBe(N);
    fast.close();
    expect(await until(() => gw.watches.count() === before, 10_000)).toBe(true);
  }, 120_000);
});
