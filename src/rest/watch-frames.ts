/**
 * The bytes a batch of watch events leaves in on a WebSocket, built once per batch (the array
 * the feed hands every watcher of a selector) and written to every socket of that selector.
 *
 * Plain: consecutive text frames, one per event. Server frames are not masked, so the bytes
 * are the same for every socket.
 *
 * Compressed (RFC 7692 permessage-deflate, which browsers offer on every WebSocket): a
 * compressing socket usually owns a deflate stream (ws keeps one of ~100–300 KB per socket and
 * compresses each message once per socket). Here a batch is compressed once for all sockets:
 * each message is deflated on its own, with the batch's previous message as preset dictionary,
 * and ends with a sync flush whose 4-byte tail `00 00 ff ff` is left off (§7.2.1). A client
 * keeps its LZ77 window from one compressed message to the next unless
 * `server_no_context_takeover` was agreed, so a reference into the previous message resolves
 * against the bytes the client has just inflated. No reference reaches before the batch, so
 * what a socket received earlier does not matter. The first message of a batch has no
 * dictionary. Watch events of one model share most of their text, so a message shrinks to
 * ~20 % of its size (bench/RESULTS.md "Watch").
 *
 * A socket gets the compressed bytes when it agreed permessage-deflate without
 * `server_no_context_takeover` and with a window (`server_max_window_bits`, 15 when absent) of
 * at least WINDOW_BITS, and when nothing else is ever compressed on it (rest/watch-stream.ts
 * sends its single events with `compress: false`). Uncompressed messages may always be sent,
 * so every other socket gets the plain frames.
 *
 * Deflating costs ~10–15 µs per message, once per batch. It pays only when many sockets share
 * the result, so a batch is compressed only when it goes to at least COMPRESS_FOR watchers
 * (the `audience` the feed reports: the size of the selector's group); the sockets of smaller
 * groups get plain frames.
 *
 * Only batches of several small events are joined at all (JOIN_MAX_AVERAGE); the others go
 * out one event at a time through ws.
 */
import { createRequire } from 'node:module';
import { constants, deflateRawSync } from 'node:zlib';
import * as ops from '../operations/index.js';
import type { WatchEvent } from '../operations/types.js';

/** ws's frame encoder (`WebSocket.Sender.frame`, not typed by @types/ws). */
const { frame } = (createRequire(import.meta.url)('ws') as { Sender: { frame(data: Buffer, o: Record<string, unknown>): Buffer[] } }).Sender;
const TEXT_FRAME = { fin: true, rsv1: false, opcode: 1, mask: false, readOnly: true };
/** RSV1 marks a compressed message (RFC 7692 §6). */
const COMPRESSED_TEXT_FRAME = { ...TEXT_FRAME, rsv1: true };

/**
 * Only batches of several small events (at most this many bytes each on average) are joined
 * into one Buffer. A single event, or events of tens of KiB, go out one by one: joining them
 * would copy each event (megabytes per read), and that churn is memory the allocator keeps
 * after a burst (the slow-consumer test's RSS bound caught it). Small events are where one
 * write per socket instead of one per event matters.
 */
export const JOIN_MAX_AVERAGE = 4 * 1024;

/** The compressor's window: 4 KiB holds the previous message of any joined batch's typical event. */
export const WINDOW_BITS = 12;
const DEFLATE_OPTIONS = { windowBits: WINDOW_BITS, memLevel: 4, level: 1, finishFlush: constants.Z_SYNC_FLUSH };
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

const batches = new WeakMap<readonly WatchEvent[], BatchBytes>();

function bytesOf(events: readonly WatchEvent[]): BatchBytes {
  let b = batches.get(events);
  if (b === undefined) {
    const payloads = events.map((e) => ops.encodeWatchEventBytes(e));
    const size = payloads.reduce((n, p) => n + p.length, 0);
    const join = events.length > 1 && size <= JOIN_MAX_AVERAGE * events.length;
    batches.set(events, (b = { payloads: join ? payloads : null }));
  }
  return b;
}

/**
 * Each payload deflated with the previous one as dictionary, as compressed text frames; null
 * if zlib ever ended a message otherwise than with a sync flush's empty stored block (the
 * receiver appends that block itself), which it does not.
 */
function deflateFrames(payloads: Buffer[]): Buffer | null {
  const parts: Buffer[] = [];
  for (let i = 0; i < payloads.length; i++) {
    const z = deflateRawSync(payloads[i]!, i === 0 ? DEFLATE_OPTIONS : { ...DEFLATE_OPTIONS, dictionary: payloads[i - 1]! });
    if (z.length < 4 || !z.subarray(z.length - 4).equals(SYNC_TAIL)) return null;
    parts.push(...frame(z.subarray(0, z.length - 4), COMPRESSED_TEXT_FRAME));
  }
  return Buffer.concat(parts);
}

/**
 * The batch as one Buffer of WebSocket frames for a socket of the given mode, `audience`
 * watchers receiving it; undefined when the batch is not joined (send its events one by one).
 */
export function watchFrames(events: readonly WatchEvent[], mode: FrameMode = 'plain', audience = 1): Buffer | undefined {
  const b = bytesOf(events);
  if (!b.payloads) return undefined;
  if (mode === 'deflate' && audience >= COMPRESS_FOR) {
    if (b.deflated === undefined) b.deflated = deflateFrames(b.payloads);
    if (b.deflated) return b.deflated;
  }
  return (b.frames ??= Buffer.concat(b.payloads.flatMap((p) => frame(p, TEXT_FRAME))));
}

/** The batch as newline-delimited JSON in one Buffer; undefined: write the events one by one. */
export function watchLines(events: readonly WatchEvent[]): Buffer | undefined {
  const b = bytesOf(events);
  if (!b.payloads) return undefined;
  return (b.lines ??= Buffer.concat(b.payloads.flatMap((p) => [p, NEWLINE])));
}
