/**
 * HTTP and WebSocket connection limits (issue 11 findings 3, 6, 8 and the per-user watch
 * quota). Transport-level, so one store (embedded) suffices. Raw sockets show what the
 * client receives byte for byte.
 */
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { allowAll } from '../../src/identity/authorizer.js';
import { adminAuth, call, startTestGateway, type TestGateway } from '../helpers/gateway.js';

const PERSONS = '/apis/people.example.com/v1alpha1/persons';

/** Opens a raw TCP connection to the gateway; collects what comes back until it closes. */
function raw(gw: TestGateway): { socket: Socket; received: () => string; closed: Promise<{ reset: boolean; at: number }> } {
  const url = new URL(gw.url);
  const socket = connect(Number(url.port), url.hostname);
  let data = '';
  let reset = false;
  socket.on('data', (d) => (data += d.toString('latin1')));
  socket.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'ECONNRESET' || e.code === 'EPIPE') reset = true;
  });
  const closed = new Promise<{ reset: boolean; at: number }>((resolve) => socket.on('close', () => resolve({ reset, at: Date.now() })));
  return { socket, received: () => data, closed };
}

const statusOf = (text: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]);
const bodyOf = (text: string) => JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4));

describe('connection limits', () => {
  let gw: TestGateway;
  const limits = { headersTimeoutMs: 1500, requestTimeoutMs: 2500, connectionsPerAddress: 40 };
  beforeAll(async () => {
    gw = await startTestGateway('embedded', { limits });
  });
  afterAll(() => gw?.dispose());

  it('slowloris: a body sent at 1 byte/s gets 408 problem within the request deadline, others are served meanwhile', async () => {
    const started = Date.now();
    const slow = raw(gw);
    slow.socket.write(`POST ${PERSONS} HTTP/1.1\r\nHost: x\r\nAuthorization: ${adminAuth}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{`);
    const drip = setInterval(() => slow.socket.writable && slow.socket.write(' '), 1000);
    const headersOnly = raw(gw);
    headersOnly.socket.write(`GET ${PERSONS} HTTP/1.1\r\nHost: x\r\n`); // never finishes its headers
    try {
      expect((await call(gw, 'GET', `${PERSONS}?size=1`, undefined, { authorization: adminAuth })).status).toBe(200);
      const [a, b] = await Promise.all([slow.closed, headersOnly.closed]);
      for (const [c, r] of [[slow, a], [headersOnly, b]] as const) {
        expect(statusOf(c.received())).toBe(408);
        expect(c.received()).toContain('content-type: application/problem+json');
        expect(bodyOf(c.received())).toMatchObject({ status: 408 });
        expect(r.at - started).toBeLessThan(limits.requestTimeoutMs + 2000);
      }
      console.log(`[figure] slowloris: body at 1 B/s cut off after ${a.at - started} ms, headers-only after ${b.at - started} ms (limits ${limits.requestTimeoutMs}/${limits.headersTimeoutMs} ms)`);
    } finally {
      clearInterval(drip);
    }
  });

  it('caps concurrent connections per client address (429 problem beyond the cap, served again after)', async () => {
    const idle = Array.from({ length: limits.connectionsPerAddress }, () => raw(gw));
    try {
      await new Promise((r) => setTimeout(r, 200));
      // A new connection (fetch could reuse one from its pool that predates the idle ones).
      const extra = raw(gw);
      extra.socket.write(`GET ${PERSONS} HTTP/1.1\r\nHost: x\r\nAuthorization: ${adminAuth}\r\n\r\n`);
      await extra.closed;
      expect(statusOf(extra.received())).toBe(429);
      expect(extra.received()).toContain('content-type: application/problem+json');
      expect(bodyOf(extra.received()).detail).toContain('limit: connections per address');
    } finally {
      for (const c of idle) c.socket.destroy();
    }
    await Promise.all(idle.map((c) => c.closed));
    await new Promise((r) => setTimeout(r, 100));
    expect((await call(gw, 'GET', `${PERSONS}?size=1`, undefined, { authorization: adminAuth })).status).toBe(200);
  });

  it('a 2 MiB query string on GET /graphql gets 431 problem, not a reset (finding 6)', async () => {
    for (let i = 0; i < 3; i++) {
      const r = await fetch(`${gw.url}/graphql?query=${'a'.repeat(2 * 1024 * 1024)}`);
      expect(r.status).toBe(431);
      expect(r.headers.get('content-type')).toBe('application/problem+json');
      expect((await r.json()).status).toBe(431);
    }
  });

  it('a malformed request after a complete answer on a keep-alive connection gets 400 problem, not a reset', async () => {
    const c = raw(gw);
    await new Promise((r) => c.socket.once('connect', r));
    c.socket.write(`GET /livez HTTP/1.1\r\nHost: x\r\n\r\n`);
    await vi.waitFor(() => expect(c.received()).toMatch(/\r\n\r\n.+/s), { timeout: 5000 });
    expect(statusOf(c.received())).toBe(200);
    const first = c.received().length;
    c.socket.write('NOT A REQUEST LINE\r\n\r\n');
    const { reset } = await c.closed;
    expect(reset).toBe(false);
    const second = c.received().slice(first);
    expect(statusOf(second)).toBe(400);
    expect(second).toContain('application/problem+json');
  });

  it('10 MiB bodies get 413 every time, REST and GraphQL (finding 6)', async () => {
    const body = 'x'.repeat(10 * 1024 * 1024);
    for (let i = 0; i < 5; i++) {
      const r = await fetch(`${gw.url}${PERSONS}`, { method: 'POST', headers: { authorization: adminAuth, 'content-type': 'application/json' }, body });
      expect(r.status).toBe(413);
      expect(r.headers.get('content-type')).toBe('application/problem+json');
      await r.text();
      const g = await fetch(`${gw.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      expect(g.status).toBe(413);
      await g.text();
      const y = await fetch(`${gw.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/graphql' }, body });
      expect(y.status).toBe(413);
      await y.text();
    }
    // A body streamed without Content-Length is cut at the limit too.
    const chunks = (async function* () {
      for (let i = 0; i < 10; i++) yield new Uint8Array(1024 * 1024).fill(32);
    })();
    const r = await fetch(`${gw.url}${PERSONS}`, {
      method: 'POST',
      headers: { authorization: adminAuth, 'content-type': 'application/json' },
      body: chunks as unknown as BodyInit,
      duplex: 'half',
    } as RequestInit);
    expect(r.status).toBe(413);
  });

  it('every refused upgrade is problem+json: Upgrade h2c, bad key, bad version (finding 8)', async () => {
    const cases: [Record<string, string>, number][] = [
      [{ Connection: 'Upgrade', Upgrade: 'h2c', 'HTTP2-Settings': 'AAMAAABkAARAAAAAAAIAAAAA' }, 400],
      [{ Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '13' }, 400],
      [{ Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '99', 'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==' }, 400],
    ];
    for (const path of [PERSONS, '/graphql']) {
      for (const [headers, status] of cases) {
        const c = raw(gw);
        const lines = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
        c.socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n${lines}\r\n`);
        await c.closed;
        expect(statusOf(c.received()), `${path} ${JSON.stringify(headers)}`).toBe(status);
        expect(c.received()).toContain('content-type: application/problem+json');
        expect(bodyOf(c.received()).status).toBe(status);
      }
    }
  });

  it('the REST watch takes no client messages: one over 4 KiB, compressed or not, closes the socket with 1009', async () => {
    for (const compress of [true, false]) {
      const ws = new WebSocket(`${gw.url.replace(/^http/, 'ws')}${PERSONS}`, { headers: { authorization: adminAuth } });
      await new Promise((resolve, reject) => {
        ws.once('open', resolve);
        ws.once('error', reject);
      });
      expect(ws.extensions).toBe('permessage-deflate');
      const code = new Promise<number>((resolve) => ws.once('close', (c) => resolve(c)));
      ws.on('error', () => undefined);
      const sent = (ws as unknown as { _socket: { bytesWritten: number } })._socket.bytesWritten;
      ws.send('x'.repeat(64 * 1024), { compress });
      expect(await code, `compress ${compress}`).toBe(1009);
      // compressed, 64 KiB of text was a few hundred bytes on the wire: the limit is on the inflated size
      if (compress) expect((ws as unknown as { _socket: { bytesWritten: number } })._socket.bytesWritten - sent).toBeLessThan(1024);
    }
  });

  it('a WebSocket message over 1 MiB closes the socket with 1009 (REST watch and graphql-ws), and prints nothing', async () => {
    const printed = vi.spyOn(console, 'error');
    for (const [path, protocol] of [[PERSONS, undefined], ['/graphql', 'graphql-transport-ws']] as const) {
      const ws = new WebSocket(`${gw.url.replace(/^http/, 'ws')}${path}`, protocol, { headers: { authorization: adminAuth } });
      await new Promise((resolve, reject) => {
        ws.once('open', resolve);
        ws.once('error', reject);
      });
      const code = new Promise<number>((resolve) => ws.once('close', (c) => resolve(c)));
      ws.on('error', () => undefined);
      ws.send('x'.repeat(1024 * 1024 + 1));
      expect(await code, path).toBe(1009);
    }
    // A client's bad frame is not a server error: nothing on the console (graphql-ws printed
    // "Internal error emitted on a WebSocket socket" with a stack for each one).
    expect(printed).not.toHaveBeenCalled();
    printed.mockRestore();
  });
});

describe('responses start at once', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway('embedded');
  });
  afterAll(() => gw?.dispose());

  it('a GraphQL subscription sent as POST gets its headers before any event (finding 5, GraphQL part)', async () => {
    const query = 'subscription { peopleExampleCom_v1alpha1_watchPersons(labelSelector: ["none.example.com/x=y"]) { type } }';
    for (const accept of ['*/*', 'text/event-stream']) {
      const r = await fetch(`${gw.url}/graphql`, {
        method: 'POST',
        headers: { authorization: adminAuth, 'content-type': 'application/json', accept },
        body: JSON.stringify({ query }),
        signal: AbortSignal.timeout(3000),
      });
      expect(r.status, accept).toBe(200);
      expect(r.headers.get('content-type'), accept).toMatch(/text\/event-stream|multipart\/mixed/);
      await r.body?.cancel();
    }
  });

  it('a REST ?watch=true ndjson stream whose selector matches nothing gets its status line and headers at once (finding 5, REST part)', async () => {
    // Raw socket: what matters is that the status line arrives with no event to send, not how a
    // client library buffers it. Resumed from the current position, so that not even the
    // BOOKMARK ending the initial events is sent (and periodic BOOKMARKs were not asked for).
    const rv = (await call(gw, 'GET', PERSONS)).body.resourceVersion;
    const c = raw(gw);
    c.socket.write(`GET ${PERSONS}?watch=true&labelSelector=none.example.com/x=y&resourceVersion=${rv} HTTP/1.1\r\nHost: x\r\nAuthorization: ${adminAuth}\r\n\r\n`);
    const deadline = Date.now() + 5000;
    while (!c.received().includes('\r\n\r\n') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const head = c.received();
    c.socket.destroy();
    expect(statusOf(head)).toBe(200);
    expect(head.toLowerCase()).toContain('content-type: application/x-ndjson');
    // Nothing but the headers: no event matched.
    expect(head.slice(head.indexOf('\r\n\r\n') + 4).replace(/^0\r\n/, '')).toBe('');
  });
});

describe('concurrent watches per user', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    // Everyone may watch here, so anonymous shows that another user's quota is separate.
    gw = await startTestGateway('embedded', { authorizer: allowAll });
  });
  afterAll(() => gw?.dispose());

  it('the 101st concurrent watch of one user gets 429; closing one frees a slot', async () => {
    const url = `${gw.url.replace(/^http/, 'ws')}${PERSONS}`;
    const open = () =>
      new Promise<WebSocket>((resolve, reject) => {
        const ws = new WebSocket(url, { headers: { authorization: adminAuth } });
        ws.once('open', () => resolve(ws));
        ws.once('unexpected-response', (_req, res) => reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { status: res.statusCode })));
        ws.once('error', reject);
      });
    const sockets: WebSocket[] = [];
    try {
      for (let i = 0; i < 100; i++) sockets.push(await open());
      await expect(open()).rejects.toMatchObject({ status: 429 });
      // ndjson watches count too
      const nd = await fetch(`${gw.url}${PERSONS}?watch=true`, { headers: { authorization: adminAuth } });
      expect(nd.status).toBe(429);
      expect((await nd.json()).detail).toContain('limit: concurrent watches per user');
      // another user (anonymous) is not affected
      const anon = new WebSocket(url);
      await new Promise((resolve, reject) => {
        anon.once('open', resolve);
        anon.once('error', reject);
      });
      anon.terminate();
      const closed = new Promise((r) => sockets[0]!.once('close', r));
      sockets[0]!.close();
      await closed;
      await new Promise((r) => setTimeout(r, 100));
      sockets[0] = await open();
    } finally {
      for (const ws of sockets) ws.terminate();
    }
  });
});
