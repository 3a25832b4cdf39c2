/**
 * The watch benchmark's clients, in their own process so that receiving does not compete with
 * the load generator's event loop: N REST WebSocket watchers on one gateway, each recording
 * every event it receives. Started by bench/lib/watch-bench.ts.
 *
 * Protocol (parent → child): {type:'open', n, url, path, auth} → {type:'opened', n, failed}
 *   {type:'report', keys} → {type:'report', total, closed, errors, seen: [count, first, last][]}
 *   {type:'reset'} → {type:'reset'}; {type:'stop'} closes every socket and exits.
 * Times are `performance.timeOrigin + performance.now()` (ms since the epoch, sub-ms precision),
 * comparable with the parent's.
 */
import { performance } from 'node:perf_hooks';
import WebSocket from 'ws';

const now = () => performance.timeOrigin + performance.now();

interface Seen {
  count: number;
  first: number;
  last: number;
}

const sockets: WebSocket[] = [];
/** Per `name@version`: how many watchers received it, first and last arrival. */
let seen = new Map<string, Seen>();
/** One parse per distinct message text: every watcher receives the same text of an event. */
let parsed = new Map<string, string | null>();
let total = 0;
let closed = 0;
let errors = 0;

function keyOf(text: string): string | null {
  let k = parsed.get(text);
  if (k === undefined) {
    const e = JSON.parse(text) as { type: string; object?: { metadata?: { name?: string; version?: number } } };
    if (e.type === 'ERROR') errors++;
    k = e.type === 'BOOKMARK' || e.type === 'ERROR' ? null : `${e.object?.metadata?.name}@${e.object?.metadata?.version}`;
    if (parsed.size > 20_000) parsed = new Map();
    parsed.set(text, k);
  } else if (k === null && text.includes('"ERROR"')) errors++;
  return k;
}

function onMessage(data: WebSocket.RawData): void {
  const t = now();
  const k = keyOf(String(data));
  if (k === null) return;
  total++;
  const s = seen.get(k);
  if (s) {
    s.count++;
    s.last = t;
  } else seen.set(k, { count: 1, first: t, last: t });
}

function open(url: string, auth: string): Promise<boolean> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, { headers: { authorization: auth }, perMessageDeflate: false });
    ws.on('message', onMessage);
    ws.once('open', () => {
      sockets.push(ws);
      resolve(true);
    });
    ws.once('close', () => closed++);
    ws.once('error', () => resolve(false));
    ws.once('unexpected-response', () => resolve(false));
  });
}

process.on('message', async (m: { type: string; n?: number; url?: string; auth?: string; keys?: string[] }) => {
  if (m.type === 'open') {
    let failed = 0;
    const batch = 50;
    for (let i = 0; i < m.n!; i += batch) {
      const ok = await Promise.all(Array.from({ length: Math.min(batch, m.n! - i) }, () => open(m.url!, m.auth!)));
      failed += ok.filter((x) => !x).length;
    }
    process.send!({ type: 'opened', n: sockets.length, failed });
  } else if (m.type === 'report') {
    const out = (m.keys ?? []).map((k) => {
      const s = seen.get(k);
      return s ? [s.count, s.first, s.last] : [0, 0, 0];
    });
    process.send!({ type: 'report', total, closed, errors, seen: out });
  } else if (m.type === 'reset') {
    seen = new Map();
    total = 0;
    process.send!({ type: 'reset' });
  } else if (m.type === 'stop') {
    for (const ws of sockets) ws.terminate();
    process.exit(0);
  }
});
process.on('disconnect', () => process.exit(0));
process.send!({ type: 'ready', url: '' });
