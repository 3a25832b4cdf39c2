/**
 * rest/watch-stream.ts `watchFrames`: the bytes a batch of watch events leaves in, shared by
 * every WebSocket of a selector. Several small events are one Buffer of consecutive text frames
 * (one write per socket per batch: the watch bench's "receiving every write" figure depends on
 * it); a single event or large events are not joined (undefined: sent one by one), which keeps
 * the slow-consumer test's RSS bound.
 */
import { describe, expect, it } from 'vitest';
import { watchFrames } from '../../src/rest/watch-stream.js';
import type { WatchEvent } from '../../src/operations/types.js';

const event = (name: string, pad = 0): WatchEvent => ({
  type: 'ADDED',
  object: { apiVersion: 'people.example.com/v1alpha1', kind: 'Person', metadata: { name, version: 1 }, spec: { note: 'x'.repeat(pad) } } as never,
  resourceVersion: '42',
});

/** Splits unmasked server frames: [fin+opcode, payload text][]. */
function frames(b: Buffer): [number, string][] {
  const out: [number, string][] = [];
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
    out.push([op, b.subarray(at, at + len).toString()]);
    i = at + len;
  }
  return out;
}

describe('watch batch bytes (WebSocket)', () => {
  it('several small events: one Buffer of final text frames, one per event, in order, the same Buffer again for the same batch', () => {
    // 500 small events (a full read of the feed) and sizes on both sides of the 126-byte header step
    const batch = [event('a'), event('b', 200), ...Array.from({ length: 498 }, (_, i) => event(`p-${i}`, 150))];
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
});
