/** Watch clients for the tests: a REST WebSocket watcher that records every event. */
import { request } from 'node:http';
import WebSocket from 'ws';
import { BenchChild } from '../../bench/lib/children.js';
import type { GatewayChildConfig } from '../../bench/lib/gateway-child.js';
import { ADMIN, adminAuth, call } from '../helpers/gateway.js';
import { join } from 'node:path';

export const PERSONS = '/apis/people.example.com/v1alpha1/persons';
export const MERGE = { 'content-type': 'application/merge-patch+json' };
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface Watcher {
  ws: WebSocket;
  events: any[];
  opened: Promise<void>;
  closed: Promise<number>;
  /** Waits until `pred(events)` holds (polling), or throws after `timeoutMs`. */
  until(pred: (events: any[]) => boolean, what?: string, timeoutMs?: number): Promise<any[]>;
  /** Events other than BOOKMARK. */
  changes(): any[];
  close(): void;
}

export function openWatch(
  gw: { url: string },
  query = '',
  headers: Record<string, string> = { authorization: adminAuth },
  path = PERSONS,
  options: WebSocket.ClientOptions = {},
): Watcher {
  // ws offers permessage-deflate by default, as browsers do.
  const ws = new WebSocket(`${gw.url.replace(/^http/, 'ws')}${path}${query}`, { ...options, headers });
  const events: any[] = [];
  ws.on('message', (data) => events.push(JSON.parse(String(data))));
  const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
  const opened = new Promise<void>((resolve, reject) => {
    ws.on('open', () => resolve());
    ws.on('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    ws.on('error', reject);
  });
  opened.catch(() => undefined);
  return {
    ws,
    events,
    opened,
    closed,
    async until(pred, what = 'events', timeoutMs = 15_000) {
      const end = Date.now() + timeoutMs;
      while (!pred(events)) {
        if (Date.now() > end) throw new Error(`timed out waiting for ${what}; got ${JSON.stringify(events.map((e) => [e.type, e.object?.metadata?.name, e.resourceVersion]))}`);
        await sleep(20);
      }
      return events;
    },
    changes: () => events.filter((e) => e.type !== 'BOOKMARK'),
    close: () => ws.close(),
  };
}

/**
 * An ndjson watch (`?watch=true`) as `authorization`: its HTTP status, the events as they
 * arrive, whether the response ended, and `close` (aborts it).
 */
export function openNdjsonWatch(gw: { url: string }, authorization: string, query = '') {
  const s = { events: [] as any[], ended: false, status: 0 };
  const abort = new AbortController();
  void (async () => {
    try {
      const res = await fetch(`${gw.url}${PERSONS}?watch=true${query}`, { headers: { authorization }, signal: abort.signal });
      s.status = res.status;
      let buf = '';
      const decoder = new TextDecoder();
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buf += decoder.decode(chunk, { stream: true });
        for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
          const line = buf.slice(0, nl).trim();
          buf = buf.slice(nl + 1);
          if (line) s.events.push(JSON.parse(line));
        }
      }
    } catch {
      // aborted by close()
    } finally {
      s.ended = true;
    }
  })();
  return Object.assign(s, { close: () => abort.abort() });
}

export const person = (name: string, labels: Record<string, string> = {}, age = 30) => ({
  metadata: { name, labels },
  spec: { name, age },
});

/** POST/PATCH/DELETE that must succeed; returns the object. */
export async function write(gw: { url: string }, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const r = await call(gw, method, path, body, { authorization: adminAuth, ...headers });
  if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

/** A gateway in a child process (the benchmark's gateway child) on the same database. */
export function startGatewayProcess(c: { dataDir: string; mongodbUrl?: string }): Promise<BenchChild> {
  const cfg: GatewayChildConfig = {
    dataDir: c.dataDir,
    mongodbUrl: c.mongodbUrl,
    pluginsDir: join(import.meta.dirname, '../../plugins'),
    adminPassword: ADMIN.password,
  };
  return BenchChild.start('gateway-2', 'gateway-child.ts', cfg, [], 120_000);
}

/** A POST whose body is sent in two halves; the second when `finish()` is called. */
export function slowCreate(gw: { url: string }, name: string) {
  const body = Buffer.from(JSON.stringify(person(name)));
  const url = new URL(gw.url + PERSONS);
  const req = request({
    host: url.hostname,
    port: url.port,
    path: url.pathname,
    method: 'POST',
    headers: { authorization: adminAuth, 'content-type': 'application/json', 'content-length': body.length },
  });
  const response = new Promise<{ status: number; text: string }>((resolve, reject) => {
    req.on('response', (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      res.on('error', reject);
    });
    req.on('error', reject);
  });
  response.catch(() => undefined);
  req.write(body.subarray(0, 10));
  return {
    response,
    finish: () => req.end(body.subarray(10)),
  };
}
