/**
 * The bytes a batch of watch events leaves in on a WebSocket, built once per batch (the array
 * the feed hands every watcher of a selector) and written to every socket of that selector.
 *
 * Plain: consecutive text frames, one per event. Server frames are not masked, so the bytes
 * are the same for every socket.
 *
 * Compressed (RFC 7692 permessage-deflate, which browsers offer on every WebSocket): a
 * compressing socket usually owns a deflate stream (ws keeps one of ~100–300 KB per socket and
 * compresses each message once per socket). Here a batch is compressed once for all sockets,
 * as one deflate stream started afresh for the batch: each message ends with a sync flush
 * whose 4-byte tail `00 00 ff ff` is left off (§7.2.1), and the next message continues the
 * stream. A client keeps its LZ77 window from one compressed message to the next unless
 * `server_no_context_takeover` was agreed, so a reference into an earlier message of the batch
 * resolves against bytes the client has just inflated. No reference reaches before the batch,
 * so what a socket received earlier does not matter. Watch events of one model share most of
 * their text, so a message shrinks to ~10 % of its size (bench/RESULTS.md at bc5cbff, "Watch").
 *
 * The compressor is pako's zlib port, one stream per gateway (its WatchHub's FrameEncoder), reset for each batch and
 * writing into one reused output buffer. Node's zlib has no synchronous call that keeps a
 * stream open: `deflateRawSync` per message built and freed a native zlib state (~40 KB,
 * reported to V8 as external memory) for every event, and at a few thousand events per second
 * that churn alone started a full garbage collection every ~250 ms (the watch bench's GC time
 * per write went from ~3 to ~40 µs).
 *
 * A socket gets the compressed bytes when it agreed permessage-deflate without
 * `server_no_context_takeover` and with a window (`server_max_window_bits`, 15 when absent) of
 * at least WINDOW_BITS, and when nothing else is ever compressed on it (rest/watch.ts
 * sends its single events with `compress: false`). Uncompressed messages may always be sent,
 * so every other socket gets the plain frames.
 *
 * Deflating costs ~10 µs per message, once per batch. It pays only when many sockets share
 * the result, so a batch is compressed only when it goes to at least COMPRESS_FOR watchers
 * (the `audience` the feed reports: the size of the selector's group); the sockets of smaller
 * groups get plain frames.
 *
 * Only batches of several small events are joined at all (JOIN_MAX_AVERAGE); the others go
 * out one event at a time through ws.
 */
import { Z_DEFAULT_STRATEGY, Z_OK, Z_SYNC_FLUSH, ZStream, zlibDeflate, zlibDeflateInit2, zlibDeflateReset } from 'pako';
import { encodeWatchEventBytes } from './encode.js';
import type { WatchEvent } from './types.js';

/** First byte of a whole text frame (FIN, opcode 1); RSV1 added marks a compressed message (RFC 7692 §6). */
const TEXT_FRAME = 0x81;
const COMPRESSED_TEXT_FRAME = TEXT_FRAME | 0x40;

/**
 * Only batches of several small events (at most this many bytes each on average) are joined
 * into one Buffer. A single event, or events of tens of KiB, go out one by one: joining them
 * would copy each event (megabytes per read), and that churn is memory the allocator keeps
 * after a burst (the slow-consumer test's RSS bound caught it). Small events are where one
 * write per socket instead of one per event matters.
 */
export const JOIN_MAX_AVERAGE = 4 * 1024;

/**
 * The compressor's window: 4 KiB holds the previous messages of a joined batch's typical event
 * (what a receiver must keep: sockets that agreed a smaller window get plain frames).
 */
export const WINDOW_BITS = 12;
/** zlib's fastest level, and a small hash table: the messages are short and alike. */
const LEVEL = 1;
const MEM_LEVEL = 4;
/** Size of the compressor's output buffer between batches (it grows for a larger batch, then shrinks back). */
const OUT_BYTES = 64 * 1024;
/** A batch is compressed when at least this many watchers receive it. */
export const COMPRESS_FOR = 32;

const SYNC_TAIL = Buffer.from([0x00, 0x00, 0xff, 0xff]);
const NEWLINE = Buffer.from('\n');

/** What a socket can take: plain frames only, or the shared compressed ones too. */
export type FrameMode = 'plain' | 'deflate';

/**
 * Reads the negotiated `Sec-WebSocket-Extensions` value (ws's `extensions`): 'deflate' when the
 * socket can take the shared compressed frames (see the header comment), else 'plain'.
 */
export function frameModeOf(extensions: string): FrameMode {
  for (const ext of extensions.split(',')) {
    const [name, ...params] = ext.split(';').map((s) => s.trim().toLowerCase());
    if (name !== 'permessage-deflate') continue;
    for (const p of params) {
      const [key, value] = p.split('=').map((s) => s.trim().replace(/^"|"$/g, ''));
      if (key === 'server_no_context_takeover') return 'plain';
      if (key === 'server_max_window_bits' && !(Number(value) >= WINDOW_BITS)) return 'plain';
    }
    return 'deflate';
  }
  return 'plain';
}

interface BatchBytes {
  /** The events' JSON, each shared with every other encoding of that event. */
  payloads: Buffer[] | null;
  frames?: Buffer;
  deflated?: Buffer | null;
  lines?: Buffer;
}

/**
 * A batch compressor: one raw deflate stream (pako's low-level zlib API), reset for
 * every batch, with an output buffer kept from one batch to the next.
 */
class BatchDeflater {
  private readonly strm = new ZStream();
  private out = new Uint8Array(OUT_BYTES);
  private readonly ok: boolean;

  constructor() {
    // negative window bits: a raw stream (no zlib header or checksum), as RFC 7692 wants
    this.ok = zlibDeflateInit2(this.strm, LEVEL, 8, -WINDOW_BITS, MEM_LEVEL, Z_DEFAULT_STRATEGY) === Z_OK;
  }

  /**
   * The payloads as compressed text frames, one message each, in one Buffer; null if zlib ever
   * ended a message otherwise than with a sync flush's empty stored block (the receiver appends
   * that block itself), which it does not.
   */
  frames(payloads: readonly Buffer[]): Buffer | null {
    const strm = this.strm;
    if (!this.ok || zlibDeflateReset(strm) !== Z_OK) return null;
    strm.output = this.out;
    strm.next_out = 0;
    strm.avail_out = this.out.length;
    const ends: number[] = [];
    for (const p of payloads) {
      // Room for the whole message even if it does not compress (zlib's bound: +5 bytes per
      // stored block of 16 KiB) and the flush: one deflate call always finishes it.
      this.reserve(p.length + (p.length >> 10) + 64);
      strm.input = p;
      strm.next_in = 0;
      strm.avail_in = p.length;
      const status = zlibDeflate(strm, Z_SYNC_FLUSH);
      const end = strm.next_out;
      if (status !== Z_OK || strm.avail_in !== 0 || strm.avail_out === 0 || !endsWithSyncTail(strm.output, end)) return null;
      ends.push(end);
    }
    // Message k is out[ends[k-1], ends[k] - 4): its flush's tail left off. The frames are a copy:
    // `out` is written over by the next batch.
    const out = strm.output;
    let size = 0;
    for (let k = 0, from = 0; k < ends.length; from = ends[k++]!) size += frameSize(ends[k]! - 4 - from);
    const bytes = Buffer.allocUnsafe(size);
    for (let k = 0, from = 0, at = 0; k < ends.length; from = ends[k++]!) {
      const len = ends[k]! - 4 - from;
      at = putHeader(bytes, at, COMPRESSED_TEXT_FRAME, len);
      bytes.set(out.subarray(from, from + len), at);
      at += len;
    }
    if (this.out.length > OUT_BYTES) this.out = new Uint8Array(OUT_BYTES);
    return bytes;
  }

  /** Makes the output buffer hold at least `n` more bytes, keeping what it holds. */
  private reserve(n: number): void {
    const strm = this.strm;
    if (strm.avail_out >= n) return;
    const grown = new Uint8Array(Math.max(strm.output.length * 2, strm.next_out + n));
    grown.set(strm.output.subarray(0, strm.next_out));
    strm.output = this.out = grown;
    strm.avail_out = grown.length - strm.next_out;
  }
}

/** Bytes of a frame with `len` payload bytes: unmasked, as a server sends (RFC 6455 §5.2). */
const frameSize = (len: number) => len + (len < 126 ? 2 : len < 65536 ? 4 : 10);

/** Writes a frame header for `len` payload bytes at `at`; returns where the payload goes. */
function putHeader(b: Buffer, at: number, first: number, len: number): number {
  b[at] = first;
  if (len < 126) {
    b[at + 1] = len;
    return at + 2;
  }
  if (len < 65536) {
    b[at + 1] = 126;
    b.writeUInt16BE(len, at + 2);
    return at + 4;
  }
  b[at + 1] = 127;
  b.writeBigUInt64BE(BigInt(len), at + 2);
  return at + 10;
}

/** The payloads as consecutive text frames, in one Buffer. */
function textFrames(payloads: readonly Buffer[]): Buffer {
  const bytes = Buffer.allocUnsafe(payloads.reduce((n, p) => n + frameSize(p.length), 0));
  let at = 0;
  for (const p of payloads) {
    at = putHeader(bytes, at, TEXT_FRAME, p.length);
    at += p.copy(bytes, at);
  }
  return bytes;
}

const endsWithSyncTail = (b: Uint8Array, end: number) =>
  end >= 4 && b[end - 4] === SYNC_TAIL[0] && b[end - 3] === SYNC_TAIL[1] && b[end - 2] === SYNC_TAIL[2] && b[end - 1] === SYNC_TAIL[3];

/**
 * The frames and lines of batches for one gateway: the bytes of a batch are built once (kept
 * while the batch array lives) and its compressor is this gateway's own.
 */
export class FrameEncoder {
  private readonly batches = new WeakMap<readonly WatchEvent[], BatchBytes>();
  private deflater: BatchDeflater | undefined;

  private bytesOf(events: readonly WatchEvent[]): BatchBytes {
    let b = this.batches.get(events);
    if (b === undefined) {
      const payloads = events.map((e) => encodeWatchEventBytes(e));
      const size = payloads.reduce((n, p) => n + p.length, 0);
      const join = events.length > 1 && size <= JOIN_MAX_AVERAGE * events.length;
      this.batches.set(events, (b = { payloads: join ? payloads : null }));
    }
    return b;
  }

  /**
   * The batch as one Buffer of WebSocket frames for a socket of the given mode, `audience`
   * watchers receiving it; undefined when the batch is not joined (send its events one by one).
   */
  watchFrames(events: readonly WatchEvent[], mode: FrameMode = 'plain', audience = 1): Buffer | undefined {
    const b = this.bytesOf(events);
    if (!b.payloads) return undefined;
    if (mode === 'deflate' && audience >= COMPRESS_FOR) {
      if (b.deflated === undefined) b.deflated = (this.deflater ??= new BatchDeflater()).frames(b.payloads);
      if (b.deflated) return b.deflated;
    }
    return (b.frames ??= textFrames(b.payloads));
  }

  /** The batch as newline-delimited JSON in one Buffer; undefined: write the events one by one. */
  watchLines(events: readonly WatchEvent[]): Buffer | undefined {
    const b = this.bytesOf(events);
    if (!b.payloads) return undefined;
    return (b.lines ??= Buffer.concat(b.payloads.flatMap((p) => [p, NEWLINE])));
  }
}
