/**
 * readBody (src/transport/read-body.ts) on a real HTTP server: a body the parser already holds
 * whole is taken from the stream's buffer at once, a body still arriving is read as it comes;
 * both give the same bytes and the same 413 over the limit.
 */
import http, { type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readBody } from '../../src/transport/read-body.js';

const LIMIT = 64 * 1024;
let server: http.Server;
let port: number;
/** How each request was found when read: its declared length buffered already, or still arriving. */
const seen: boolean[] = [];

beforeAll(async () => {
  server = http.createServer((req: IncomingMessage, res) => {
    // `x-wait`: read once the whole body has surely arrived; otherwise at once.
    void (async () => {
      if (req.headers['x-wait']) await sleep(20);
      seen.push(req.readableLength >= Number(req.headers['content-length']));
      try {
        const limit = Number(req.headers['x-limit'] ?? LIMIT);
        const body = await readBody(req, limit, 4 * limit);
        res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(body);
      } catch (e) {
        res.writeHead((e as { status?: number }).status ?? 500).end(String((e as Error).message));
      }
    })();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

/** POSTs `parts`, writing each after `gapMs`; answers status and body. */
function post(parts: Buffer[], gapMs: number, limit = LIMIT, wait = gapMs === 0): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const total = parts.reduce((n, p) => n + p.length, 0);
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/', headers: { 'content-length': total, 'x-limit': limit, ...(wait && { 'x-wait': '1' }) }, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    void (async () => {
      for (const p of parts) {
        req.write(p);
        if (gapMs) await sleep(gapMs);
      }
      req.end();
    })();
  });
}

const bytes = (n: number, seed: number) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 31 + seed) & 255));

describe('readBody', () => {
  it('a body received whole and one still arriving give the same bytes', async () => {
    seen.length = 0;
    const small = bytes(300, 1);
    const whole = await post([small], 0);
    expect(whole.status).toBe(200);
    expect(whole.body.equals(small)).toBe(true);
    const parts = [bytes(1000, 2), bytes(20_000, 3), bytes(5, 4)];
    const slow = await post(parts, 30);
    expect(slow.status).toBe(200);
    expect(slow.body.equals(Buffer.concat(parts))).toBe(true);
    const empty = await post([], 0);
    expect(empty.status).toBe(200);
    expect(empty.body.length).toBe(0);
    // Both ways were taken: the first request was whole when read, the slow one was not.
    expect(seen[0]).toBe(true);
    expect(seen[1]).toBe(false);
  });

  it('over the limit is a 413 both ways', async () => {
    seen.length = 0;
    const whole = await post([bytes(301, 5)], 0, 300);
    const slow = await post([bytes(LIMIT, 6), bytes(10, 7)], 30);
    const large = await post([bytes(LIMIT + 1, 8)], 0);
    expect([whole.status, slow.status, large.status]).toEqual([413, 413, 413]);
    expect(whole.body.toString()).toMatch(/exceeds 300 bytes/);
    expect(slow.body.toString()).toMatch(/exceeds 65536 bytes/);
    // A body larger than the stream's buffer is never whole before it is read: the parser waits.
    expect(seen).toEqual([true, false, false]);
  });
});
