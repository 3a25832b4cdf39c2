/**
 * The watch benchmark's clients, in their own process so that receiving does not compete with
 * the load generator's event loop: N REST WebSocket watchers on one gateway. Started by
 * bench/lib/watch-bench.ts.
 *
 * They share the 2 cores with the gateway they measure, so receiving must cost as little as
 * possible: no WebSocket library, no per-message string or JSON. Each socket comes from a plain
 * HTTP upgrade, and its frames are read straight from the socket's chunks (RFC 6455 §5.2; server
 * frames are unmasked, ours must be masked). The event type is payload byte 9: the gateway's
 * events are `JSON.stringify({type, object, resourceVersion})`, so every one starts `{"type":"`.
 *
 * Compression: by default each socket offers permessage-deflate as a browser does (RFC 7692),
 * with `server_max_window_bits=12` (a 4 KiB window, so that a socket's inflate state stays
 * small; the gateway compresses with that window, watch/frames.ts). The gateway compresses
 * only change batches (ADDED / MODIFIED / DELETED); BOOKMARK and ERROR go out uncompressed. So
 * a compressed message counts as one change without being inflated, except on the first
 * VERIFIERS sockets, which inflate every compressed message with one inflate stream each, as a
 * browser does (pako's zlib port: a stream keeps its window from message to message, and no
 * per-message zlib state is built, whose churn once cost this process more CPU than all the
 * counting), and check it like a plain one: anything else counts as `bad`. In the throughput
 * phases a verifier checks each event's opening and type byte; in keys mode it parses the
 * JSON and compares the object's `name@version` with the parent's writes.
 *
 * Latency (keys mode): every socket records the arrival time of each change since the last
 * reset; the parent's writes are sequential, so the k-th change a socket receives is the k-th
 * write (the feed delivers in order, exactly once: the verifiers check that their k-th change is
 * the k-th key the parent names, and count a mismatch as `bad`). No socket decodes for this,
 * so the client's own work adds no delay to the figures.
 *
 * Protocol (parent → child): {type:'open', n, url, path, auth, deflate} → {type:'opened', n, failed, deflated}
 *   {type:'mode', keys} → {type:'mode'}: keys = record per-socket arrival times (latency phase,
 *     few writes); otherwise only per-socket counters (throughput phases). Counters run in both
 *     modes; keys is on until told otherwise.
 *   {type:'report', keys} → {type:'report', total, closed, errors, bad, seen: [count, first, last][],
 *     sockets: {n, open, min, minOpen, sum, last, bytes}} (counts since the last reset; seen[k]
 *     = how many sockets have a k-th change, its first and last arrival; min over every socket
 *     and over the still-open ones, last = latest arrival of an event at any socket, bytes =
 *     bytes read by all sockets since they opened)
 *   {type:'reset'} → {type:'reset'}; {type:'stop'} closes every socket and exits.
 * Times are `performance.timeOrigin + performance.now()` (ms since the epoch, sub-ms precision),
 * comparable with the parent's, read once per chunk: events in one chunk arrived together.
 */
import { createHash, randomBytes } from 'node:crypto';
import { request } from 'node:http';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { Z_OK, Z_SYNC_FLUSH, ZStream, zlibInflate, zlibInflateInit2 } from 'pako';

const now = () => performance.timeOrigin + performance.now();
const WS_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
/** Payload bytes a throughput-mode text frame needs: `{"type":"` and the type's first letter. */
const TYPE_AT = 9;
/** The compression window asked of the server (server_max_window_bits). */
const WINDOW_BITS = 12;
/** Where the verifiers' inflaters write (each message is handled before the next is inflated). */
const INFLATED = new Uint8Array(1 << 20);
const SYNC_TAIL = Buffer.from([0x00, 0x00, 0xff, 0xff]);
/** Sockets that inflate every compressed message even in the throughput phases. */
const VERIFIERS = 4;

interface Conn {
  socket: Socket;
  /** Events (ADDED / MODIFIED / DELETED) since the last reset, and the arrival of the latest. */
  count: number;
  last: number;
  closed: boolean;
  /** Start of a frame whose needed bytes span chunks, and how many bytes it needs at least. */
  part: Buffer | undefined;
  need: number;
  /** Bytes of the current frame's payload still to pass over (not needed). */
  skip: number;
  /** permessage-deflate agreed; a verifier's inflate stream (created with its first message). */
  deflate: boolean;
  inflater: ZStream | undefined;
  /** Decodes every event, also compressed ones (see the header). */
  verifier: boolean;
  /** Keys mode: arrival of each change since the reset; a verifier's keys (`name@version`). */
  times: number[];
  keys: string[];
  /** Keys already compared with the parent's. */
  checked: number;
}

const conns: Conn[] = [];
let keysMode = true;
let total = 0;
let closed = 0;
let errors = 0;
/** Frames this reader does not expect from the gateway (fragmented, masked, not `{"type":"…`). */
let bad = 0;
const PREFIX = Buffer.from('{"type":"');

function markClosed(c: Conn): void {
  if (c.closed) return;
  c.closed = true;
  closed++;
}

/** Pong echoing the ping's payload (≤ 125 bytes for control frames), masked as a client must. */
function pong(c: Conn, payload: Buffer): void {
  const mask = randomBytes(4);
  const out = Buffer.allocUnsafe(6 + payload.length);
  out[0] = 0x8a;
  out[1] = 0x80 | payload.length;
  mask.copy(out, 2);
  for (let i = 0; i < payload.length; i++) out[6 + i] = payload[i]! ^ mask[i & 3]!;
  c.socket.write(out);
}

/** A verifier's check of one whole event: `name@version` (keys mode), or undefined (counted bad unless not keys mode). */
function keyOf(payload: Buffer): string | undefined {
  if (!payload.subarray(0, PREFIX.length).equals(PREFIX)) {
    bad++;
    return undefined;
  }
  if (!keysMode) return undefined;
  const e = JSON.parse(payload.toString('utf8')) as { type: string; object?: { metadata?: { name?: string; version?: number } } };
  // The byte the other sockets go by must name the same type.
  if (e.type.charCodeAt(0) !== payload[TYPE_AT]) bad++;
  return `${e.object?.metadata?.name}@${e.object?.metadata?.version}`;
}

/** A text frame (one event); `b[at…]` is its payload, whole on a verifier, else ≥ TYPE_AT + 1 bytes. */
function onEvent(c: Conn, b: Buffer, at: number, len: number, t: number): void {
  const type = len > TYPE_AT ? b[at + TYPE_AT] : 0;
  if (type === 0x42 /* B */) return;
  if (type === 0x45 /* E */) {
    errors++;
    return;
  }
  if (type !== 0x41 /* A */ && type !== 0x4d /* M */ && type !== 0x44 /* D */) {
    bad++;
    return;
  }
  change(c, t);
  if (c.verifier) {
    const k = keyOf(b.subarray(at, at + len));
    if (keysMode && k !== undefined) c.keys.push(k);
  }
}

function change(c: Conn, t: number): void {
  c.count++;
  c.last = t;
  total++;
  if (keysMode) c.times.push(t);
}

/**
 * A compressed message (RFC 7692): the payload and the sync flush's tail the sender left off,
 * through the socket's inflate stream. The result is a view of INFLATED, valid until the next call.
 */
function inflate(c: Conn, payload: Buffer): Buffer | undefined {
  let s = c.inflater;
  if (!s) {
    s = c.inflater = new ZStream();
    // negative window bits: a raw stream, as RFC 7692 sends it
    if (zlibInflateInit2(s, -WINDOW_BITS) !== Z_OK) throw new Error('pako: inflateInit2 failed');
  }
  s.output = INFLATED;
  s.next_out = 0;
  s.avail_out = INFLATED.length;
  for (const input of [payload, SYNC_TAIL]) {
    s.input = input;
    s.next_in = 0;
    s.avail_in = input.length;
    // Z_OK: progress; anything else (a data error, the output full) leaves the stream unusable
    if (zlibInflate(s, Z_SYNC_FLUSH) !== Z_OK || s.avail_in !== 0 || s.avail_out === 0) {
      bad++;
      c.inflater = undefined;
      return undefined;
    }
  }
  return Buffer.from(INFLATED.buffer, INFLATED.byteOffset, s.next_out);
}

/** A compressed text frame (one change); `b[at…at+len]` is its whole payload. */
function onCompressed(c: Conn, b: Buffer, at: number, len: number, t: number): void {
  if (!c.verifier) return change(c, t);
  const out = inflate(c, b.subarray(at, at + len));
  if (!out) return;
  if (out[TYPE_AT] === 0x42 /* B */ || out[TYPE_AT] === 0x45 /* E */) bad++; // never compressed
  onEvent(c, out, 0, out.length, t);
}

/**
 * Handles the frames of `b` from `off`; returns where an incomplete one starts (b.length when
 * none), having set `c.need` to the bytes it needs at least. A frame whose needed bytes are
 * here but whose payload goes on leaves the rest in `c.skip`.
 */
function frames(c: Conn, b: Buffer, off: number, t: number): number {
  let p = off;
  while (p < b.length) {
    const avail = b.length - p;
    if (avail < 2) return need(c, 2, p);
    const b0 = b[p]!;
    const b1 = b[p + 1]!;
    const len7 = b1 & 0x7f;
    const hl = 2 + (len7 === 126 ? 2 : len7 === 127 ? 8 : 0) + (b1 & 0x80 ? 4 : 0);
    if (avail < hl) return need(c, hl, p);
    const len = len7 === 126 ? b.readUInt16BE(p + 2) : len7 === 127 ? Number(b.readBigUInt64BE(p + 2)) : len7;
    const op = b0 & 0x0f;
    const rsv1 = (b0 & 0x40) !== 0;
    // Only a throughput-mode text frame can be handled from a prefix of its payload (a
    // compressed one from none of it, unless this socket verifies).
    const want = op !== 1 || c.verifier ? len : rsv1 ? 0 : Math.min(len, TYPE_AT + 1);
    if (avail < hl + want) return need(c, hl + want, p);
    const at = p + hl;
    if (b1 & 0x80 || !(b0 & 0x80) || op === 0 || (rsv1 && (!c.deflate || op !== 1)) || b0 & 0x30) bad++; // whole, unmasked messages; RSV1 only if agreed
    else if (op === 1 && rsv1) onCompressed(c, b, at, want, t);
    else if (op === 1) onEvent(c, b, at, want, t);
    else if (op === 8) {
      markClosed(c);
      c.socket.destroy();
    } else if (op === 9) pong(c, b.subarray(at, at + len));
    if (avail >= hl + len) p += hl + len;
    else {
      c.skip = hl + len - avail;
      return b.length;
    }
  }
  return p;
}

function need(c: Conn, n: number, at: number): number {
  c.need = n;
  return at;
}

function onData(c: Conn, chunk: Buffer): void {
  const t = now();
  let off = 0;
  for (;;) {
    if (c.skip) {
      const n = Math.min(c.skip, chunk.length - off);
      c.skip -= n;
      off += n;
    }
    if (off >= chunk.length) return;
    if (!c.part) break;
    // Complete the pending frame with only the bytes it needs, not a copy of the whole chunk.
    const take = Math.min(chunk.length - off, c.need - c.part.length);
    const merged = Buffer.concat([c.part, chunk.subarray(off, off + take)]);
    off += take;
    const end = frames(c, merged, 0, t);
    c.part = end < merged.length ? merged.subarray(end) : undefined;
  }
  const end = frames(c, chunk, off, t);
  // A copy: the chunk's memory may be reused (and holding a slice would keep all of it alive).
  if (end < chunk.length) c.part = Buffer.from(chunk.subarray(end));
}

function open(url: string, auth: string, deflate: boolean): Promise<boolean> {
  return new Promise((resolve) => {
    const u = new URL(url.replace(/^ws/, 'http'));
    const key = randomBytes(16).toString('base64');
    const req = request({
      host: u.hostname,
      port: u.port,
      path: `${u.pathname}${u.search}`,
      agent: false,
      headers: {
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-version': '13',
        'sec-websocket-key': key,
        authorization: auth,
        ...(deflate ? { 'sec-websocket-extensions': `permessage-deflate; client_max_window_bits; server_max_window_bits=${WINDOW_BITS}` } : {}),
      },
    });
    req.once('upgrade', (res, socket: Socket, head: Buffer) => {
      const accept = createHash('sha1').update(key + WS_GUID).digest('base64');
      if (res.statusCode !== 101 || res.headers['sec-websocket-accept'] !== accept) {
        socket.destroy();
        return resolve(false);
      }
      const agreed = /^\s*permessage-deflate/i.test(String(res.headers['sec-websocket-extensions'] ?? ''));
      if (agreed && !deflate) {
        socket.destroy();
        return resolve(false);
      }
      const c: Conn = {
        socket,
        count: 0,
        last: 0,
        closed: false,
        part: undefined,
        need: 0,
        skip: 0,
        deflate: agreed,
        inflater: undefined,
        verifier: conns.length < VERIFIERS,
        times: [],
        keys: [],
        checked: 0,
      };
      socket.setNoDelay(true);
      socket.on('error', () => undefined); // 'close' follows
      socket.once('close', () => markClosed(c));
      socket.on('data', (d: Buffer) => onData(c, d));
      conns.push(c);
      if (head.length) onData(c, head);
      resolve(true);
    });
    // Anything but 101 (a refused watch answers with a problem response).
    req.once('response', (res) => {
      res.resume();
      resolve(false);
    });
    req.once('error', () => resolve(false));
    req.end();
  });
}

function socketStats() {
  let min = Infinity;
  let minOpen = Infinity;
  let sum = 0;
  let last = 0;
  let openCount = 0;
  for (const c of conns) {
    min = Math.min(min, c.count);
    if (!c.closed) {
      openCount++;
      minOpen = Math.min(minOpen, c.count);
    }
    sum += c.count;
    last = Math.max(last, c.last);
  }
  // Infinity does not survive IPC's JSON: none = -1.
  const bytes = conns.reduce((n, c) => n + c.socket.bytesRead, 0);
  return { n: conns.length, open: openCount, min: conns.length ? min : -1, minOpen: openCount ? minOpen : -1, sum, last, bytes };
}

process.on('message', async (m: { type: string; n?: number; url?: string; auth?: string; keys?: string[] | boolean; deflate?: boolean }) => {
  if (m.type === 'open') {
    let failed = 0;
    const batch = 50;
    for (let i = 0; i < m.n!; i += batch) {
      const ok = await Promise.all(Array.from({ length: Math.min(batch, m.n! - i) }, () => open(m.url!, m.auth!, m.deflate !== false)));
      failed += ok.filter((x) => !x).length;
    }
    process.send!({ type: 'opened', n: conns.length, failed, deflated: conns.filter((c) => c.deflate).length });
  } else if (m.type === 'mode') {
    keysMode = m.keys === true;
    process.send!({ type: 'mode' });
  } else if (m.type === 'report') {
    const keys = (m.keys as string[] | undefined) ?? [];
    const out = keys.map((_, i) => {
      let count = 0;
      let first = Infinity;
      let last = 0;
      for (const c of conns) {
        const t = c.times[i];
        if (t === undefined) continue;
        count++;
        first = Math.min(first, t);
        last = Math.max(last, t);
      }
      return count ? [count, first, last] : [0, 0, 0];
    });
    for (const c of conns) {
      if (!c.verifier) continue;
      for (let i = c.checked; i < Math.min(c.keys.length, keys.length); i++) if (c.keys[i] !== keys[i]) bad++;
      c.checked = Math.max(c.checked, Math.min(c.keys.length, keys.length));
    }
    process.send!({ type: 'report', total, closed, errors, bad, seen: out, sockets: socketStats() });
  } else if (m.type === 'reset') {
    total = 0;
    for (const c of conns) {
      c.count = 0;
      c.last = 0;
      c.times = [];
      c.keys = [];
      c.checked = 0;
    }
    process.send!({ type: 'reset' });
  } else if (m.type === 'stop') {
    for (const c of conns) c.socket.destroy();
    process.exit(0);
  }
});
process.on('disconnect', () => process.exit(0));
process.send!({ type: 'ready', url: '' });
