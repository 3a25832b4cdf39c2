/**
 * watch/frames.ts: the bytes a batch of watch events leaves in, shared by every WebSocket
 * of a selector. Several small events are one Buffer of consecutive text frames (one write per
 * socket per batch: the watch bench's "receiving every write" figure depends on it); a single
 * event or large events are not joined (undefined: sent one by one), which keeps the
 * slow-consumer test's RSS bound. Sockets that agreed permessage-deflate with context takeover
 * get the batch compressed once for all of them, as one deflate stream started afresh for the
 * batch; these tests decode it the way an RFC 7692 client does (one inflate stream per socket,
 * its window kept across messages, `00 00 ff ff` appended to each).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { constants, createInflateRaw, type InflateRaw } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { COMPRESS_FOR, FrameEncoder, frameModeOf, WINDOW_BITS } from '../../src/watch/frames.js';
import type { WatchEvent } from '../../src/operations/types.js';

/** One gateway's encoder (its WatchHub holds one). */
const encoder = new FrameEncoder();
const watchFrames = encoder.watchFrames.bind(encoder);

const event = (name: string, pad = 0): WatchEvent => ({
  type: 'ADDED',
  object: { apiVersion: 'people.example.com/v1alpha1', kind: 'Person', metadata: { name, version: 1 }, spec: { note: 'x'.repeat(pad) } } as never,
  resourceVersion: '42',
});

/** Splits unmasked server frames: [fin+rsv+opcode byte, payload][] (payload as text: `frames`). */
function rawFrames(b: Buffer): [number, Buffer][] {
  const out: [number, Buffer][] = [];
  for (let i = 0; i < b.length; ) {
    const op = b[i]!;
    let len = b[i + 1]!;
    let at = i + 2;
    if (len === 126) {
      len = b.readUInt16BE(at);
      at += 2;
    } else if (len === 127) {
      len = Number(b.readBigUInt64BE(at));
      at += 8;
    }
    out.push([op, b.subarray(at, at + len)]);
    i = at + len;
  }
  return out;
}
const frames = (b: Buffer): [number, string][] => rawFrames(b).map(([op, p]) => [op, p.toString()]);

/** A permessage-deflate receiver with context takeover: one inflate stream for the socket's life. */
class Receiver {
  private readonly inflate: InflateRaw;
  constructor(windowBits = 15) {
    this.inflate = createInflateRaw({ windowBits });
  }
  /** The messages of `b`, compressed (RSV1) or not, as text, in order. */
  async messages(b: Buffer): Promise<string[]> {
    const out: string[] = [];
    for (const [op, payload] of rawFrames(b)) {
      expect(op & 0x0f).toBe(1);
      if (!(op & 0x40)) {
        out.push(payload.toString());
        continue;
      }
      out.push(await this.inflateMessage(payload));
    }
    return out;
  }

  private inflateMessage(payload: Buffer): Promise<string> {
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      const onData = (c: Buffer) => chunks.push(c);
      this.inflate.on('data', onData);
      this.inflate.once('error', reject);
      this.inflate.write(Buffer.concat([payload, Buffer.from([0, 0, 0xff, 0xff])]));
      this.inflate.flush(constants.Z_SYNC_FLUSH, () => {
        this.inflate.off('data', onData);
        this.inflate.off('error', reject);
        resolve(Buffer.concat(chunks).toString());
      });
    });
  }

  close(): void {
    this.inflate.close();
  }
}

/** Events like the gateway's: the same shape, a random uid each, some of them multi-byte text. */
const realistic = (n: number, tag: string): WatchEvent[] =>
  Array.from({ length: n }, (_, i) => ({
    type: i % 3 === 0 ? 'ADDED' : i % 3 === 1 ? 'MODIFIED' : 'DELETED',
    object: {
      apiVersion: 'people.example.com/v1alpha1',
      kind: 'Person',
      metadata: { name: `${tag}-${i}`, uid: randomUUID(), version: i + 1, labels: { 'people.example.com/team': `t${i % 7}` } },
      spec: { name: i % 5 === 0 ? `Zoë ${'ß'.repeat(i % 40)} 東京 ${i}` : `person ${i}`, note: 'x'.repeat((i * 37) % 3000) },
    } as never,
    resourceVersion: String(1000 + i),
  }));

describe('watch batch bytes (WebSocket)', () => {
  it('several small events: one Buffer of final text frames, one per event, in order, the same Buffer again for the same batch', () => {
    // 500 small events (a full read of the feed), sizes on both sides of the 126-byte header
    // step, and one event past 64 KiB (an 8-byte length) in a batch small on average
    const batch = [event('a'), event('b', 200), event('z', 70_000), ...Array.from({ length: 497 }, (_, i) => event(`p-${i}`, 150))];
    const b = watchFrames(batch);
    expect(Buffer.isBuffer(b)).toBe(true);
    const got = frames(b!);
    expect(got.map(([op]) => op)).toEqual(batch.map(() => 0x81));
    expect(got.map(([, text]) => text)).toEqual(batch.map((e) => JSON.stringify(e)));
    expect(watchFrames(batch)).toBe(b);
  });

  it('a single event or large events are not joined', () => {
    expect(watchFrames([event('one')])).toBeUndefined();
    expect(watchFrames([event('big-1', 32 * 1024), event('big-2', 32 * 1024)])).toBeUndefined();
  });

  it('a batch for fewer than COMPRESS_FOR watchers stays plain; for more, compressing sockets share one compressed Buffer', () => {
    const batch = realistic(50, 'c');
    const plain = watchFrames(batch);
    expect(watchFrames(batch, 'deflate', COMPRESS_FOR - 1)).toBe(plain);
    const z = watchFrames(batch, 'deflate', COMPRESS_FOR);
    expect(z).not.toBe(plain);
    expect(watchFrames(batch, 'deflate', 1000)).toBe(z);
    expect(watchFrames(batch, 'plain', 1000)).toBe(plain);
    expect(watchFrames(batch)).toBe(plain); // plain sockets keep getting the plain bytes
    const got = rawFrames(z!);
    expect(got.map(([op]) => op)).toEqual(batch.map(() => 0xc1)); // FIN + RSV1 + text
    expect(z!.length).toBeLessThan(plain!.length / 2);
  });

  it('compressed batches decode, with one inflate stream per socket, to exactly the events, across batches and plain messages in between', async () => {
    const rx = new Receiver();
    try {
      const want: string[] = [];
      const got: string[] = [];
      for (let round = 0; round < 7; round++) {
        // batches of 2–200 events, some with events larger than the compressor's window, one
        // with an event larger than its output buffer between batches (64 KiB; it grows)
        const batch = realistic([2, 200, 7, 64, 3, 120, 60][round]!, `r${round}`);
        if (round === 3) batch[1] = { ...batch[1]!, object: { ...batch[1]!.object, spec: { note: 'y'.repeat(2 ** WINDOW_BITS + 500) } } as never };
        if (round === 6) batch[5] = { ...batch[5]!, object: { ...batch[5]!.object, spec: { note: randomBytes(90_000).toString('base64') } } as never };
        const bytes = watchFrames(batch, 'deflate', COMPRESS_FOR)!;
        expect(rawFrames(bytes).map(([op]) => op)).toEqual(batch.map(() => 0xc1)); // all compressed
        got.push(...(await rx.messages(bytes)));
        // No reference reaches before the batch: a receiver that saw nothing earlier, with the
        // smallest window a socket may have agreed (server_max_window_bits = WINDOW_BITS), decodes it too.
        const alone = new Receiver(WINDOW_BITS);
        try {
          expect(await alone.messages(bytes)).toEqual(batch.map((e) => JSON.stringify(e)));
        } finally {
          alone.close();
        }
        want.push(...batch.map((e) => JSON.stringify(e)));
        // a single event goes out through ws, uncompressed, between batches
        const single = realistic(1, `s${round}`)[0]!;
        got.push(...(await rx.messages(Buffer.concat(frames0(single)))));
        want.push(JSON.stringify(single));
      }
      expect(got).toEqual(want);
    } finally {
      rx.close();
    }
  });

  it('frame modes: compressed only with context takeover and a window of at least WINDOW_BITS', () => {
    expect(frameModeOf('')).toBe('plain');
    expect(frameModeOf('permessage-deflate')).toBe('deflate');
    expect(frameModeOf('permessage-deflate; client_max_window_bits=15; client_no_context_takeover')).toBe('deflate');
    expect(frameModeOf('permessage-deflate; server_max_window_bits=15')).toBe('deflate');
    expect(frameModeOf(`permessage-deflate; server_max_window_bits=${WINDOW_BITS}`)).toBe('deflate');
    expect(frameModeOf(`permessage-deflate; server_max_window_bits=${WINDOW_BITS - 1}`)).toBe('plain');
    expect(frameModeOf('permessage-deflate; server_no_context_takeover')).toBe('plain');
    expect(frameModeOf('Permessage-Deflate; Server_No_Context_Takeover')).toBe('plain');
    expect(frameModeOf('x-webkit-deflate-frame')).toBe('plain');
  });
});

/** One event as ws sends it with `compress: false`: an unmasked, uncompressed text frame. */
function frames0(e: WatchEvent): Buffer[] {
  const p = Buffer.from(JSON.stringify(e));
  const head = p.length < 126 ? Buffer.from([0x81, p.length]) : p.length < 65536 ? Buffer.from([0x81, 126, p.length >> 8, p.length & 255]) : undefined;
  if (!head) throw new Error('test event too large');
  return [head, p];
}
