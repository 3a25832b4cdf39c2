/**
 * Compressed watch batches on real sockets (watch/frames.ts): a batch of changes goes to
 * every WebSocket of a selector that agreed permessage-deflate, compressed once for all of
 * them, when the selector has at least COMPRESS_FOR watchers. ws clients (which offer the
 * extension by default, as browsers do) must decode exactly the events an uncompressing client
 * gets, in order, while reading far fewer bytes; a client that asked for
 * server_no_context_takeover, one that offered no extension, and the watchers of a small
 * selector get plain frames. The transport does not depend on the store: embedded only.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMPRESS_FOR } from '../../src/watch/frames.js';
import { adminAuth, call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { MERGE, openWatch, person, PERSONS, write, type Watcher } from './helpers.js';

const LABEL = 'people.example.com/zip';
const bytesRead = (w: Watcher) => (w.ws as unknown as { _socket: { bytesRead: number } })._socket.bytesRead;
const summary = (w: Watcher) => w.changes().map((e) => `${e.type} ${e.object.metadata.name} v${e.object.metadata.version} @${e.resourceVersion}`);

/** Runs `fn` over `items` with `n` in flight. */
async function pool<T>(items: T[], n: number, fn: (x: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: n }, async () => {
    while (next < items.length) await fn(items[next++]!);
  }));
}

describe('compressed watch batches (embedded)', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway('embedded');
  });
  afterAll(() => gw?.dispose());

  it('many compressing watchers of one selector decode every change exactly, reading far fewer bytes; no-context-takeover, plain clients and a small selector get plain frames', async () => {
    const { body } = await call(gw, 'GET', `${PERSONS}?size=1`, undefined, { authorization: adminAuth });
    const query = `?labelSelector=${LABEL}=yes&resourceVersion=${body.resourceVersion as string}`;
    const noContext = openWatch(gw, query, undefined, undefined, { perMessageDeflate: { serverNoContextTakeover: true } });
    const plain = openWatch(gw, query, undefined, undefined, { perMessageDeflate: false });
    // One of them asks for the smallest window the gateway compresses for (server_max_window_bits=12).
    const zipped = Array.from({ length: COMPRESS_FOR }, (_, i) => openWatch(gw, query, undefined, undefined, i === 0 ? { perMessageDeflate: { serverMaxWindowBits: 12 } } : {}));
    // Another selector matching the same objects, with too few watchers to compress for.
    const few = Array.from({ length: 3 }, () => openWatch(gw, `?labelSelector=${LABEL}&resourceVersion=${body.resourceVersion as string}`));
    await Promise.all([noContext, plain, ...zipped, ...few].map((w) => w.opened));
    expect(zipped[0]!.ws.extensions).toBe('permessage-deflate');
    expect(noContext.ws.extensions).toBe('permessage-deflate');
    expect(plain.ws.extensions).toBe('');

    // Writes 16 at a time, so that reads of the feed carry several changes each (joined batches).
    const names = Array.from({ length: 240 }, (_, i) => `zip-${i}`);
    await pool(names, 16, (n) => write(gw, 'POST', PERSONS, person(n, { [LABEL]: 'yes' }, 20)));
    await pool(names.slice(0, 120), 16, (n) => write(gw, 'PATCH', `${PERSONS}/${n}`, { spec: { age: 40 } }, MERGE));
    await pool(names.slice(60, 120), 16, (n) => write(gw, 'PATCH', `${PERSONS}/${n}`, { metadata: { labels: { [LABEL]: 'no' } } }, MERGE));
    await pool(names.slice(120, 200), 16, (n) => write(gw, 'DELETE', `${PERSONS}/${n}`));
    const total = 240 + 120 + 60 + 80;

    const all = [...zipped, noContext, plain];
    const fewTotal = 240 + 120 + 60 + 80; // relabelling stays inside `exists`: MODIFIED
    for (const w of all) await w.until((ev) => ev.filter((e) => e.type !== 'BOOKMARK').length >= total, 'every change', 30_000);
    const want = summary(plain);
    expect(want.length).toBe(total);
    expect(want.filter((s) => s.startsWith('DELETED')).length).toBe(60 + 80); // left the selector, or deleted
    for (const w of all) {
      expect(summary(w)).toEqual(want);
      expect(w.changes()).toEqual(plain.changes());
    }
    for (const w of few) await w.until((ev) => ev.filter((e) => e.type !== 'BOOKMARK').length >= fewTotal, 'every change (small selector)', 30_000);
    for (const w of few) expect(summary(w)).toEqual(summary(few[0]!));
    expect(few[0]!.changes().length).toBe(fewTotal);
    // The compressing watchers of the large selector read a fraction of the bytes; the others
    // about as many as the client without compression (the small selector's objects differ
    // only in MODIFIED vs DELETED events).
    for (const w of zipped) expect(bytesRead(w)).toBeLessThan(bytesRead(plain) * 0.5);
    expect(bytesRead(noContext)).toBeGreaterThan(bytesRead(plain) * 0.9);
    for (const w of few) expect(bytesRead(w)).toBeGreaterThan(bytesRead(plain) * 0.8);
    for (const w of [...all, ...few]) expect(w.ws.readyState).toBe(w.ws.OPEN);
    for (const w of [...all, ...few]) w.close();
  }, 120_000);

});
