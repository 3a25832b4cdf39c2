/**
 * Reads a request body with a size limit. A body over the limit is not kept but still read and
 * discarded, up to `discardLimit` (the gateway's discardBytes), before the caller answers 413: a server that stops
 * reading and closes while the client is still sending makes the client see a reset instead of
 * the 413. Beyond the discard limit the 413 is sent at once and the connection closed.
 */
import type { IncomingMessage } from 'node:http';
import { PayloadTooLarge } from '../errors/index.js';

const tooLarge = (limit: number) => new PayloadTooLarge(`the request body exceeds ${limit} bytes (limit: body size ${limit} bytes)`);

/** `limit` and `discardLimit`: the gateway's bodyBytes and discardBytes (src/limits.ts). */
export async function readBody(req: IncomingMessage, limit: number, discardLimit: number): Promise<Buffer> {
  // The 'request' event is emitted from inside the parser, before it reaches the body of the
  // same packet: one microtask later it is through it, and a small body is buffered whole.
  let whole = received(req, limit);
  if (!whole) {
    await null;
    whole = received(req, limit);
  }
  return whole ?? (await stream(req, limit, discardLimit));
}

/** The body as it comes, chunk by chunk. */
function stream(req: IncomingMessage, limit: number, discardLimit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > discardLimit) {
      req.resume();
      reject(tooLarge(limit));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    const done = (fn: () => void) => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
      fn();
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        over = true;
        chunks.length = 0;
        if (size > discardLimit) {
          done(() => reject(tooLarge(limit)));
          req.resume(); // keep draining whatever else arrives until the socket closes
        }
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => done(() => (over ? reject(tooLarge(limit)) : resolve(Buffer.concat(chunks, size))));
    const onError = (e: Error) => done(() => reject(e));
    const onClose = () => done(() => reject(over ? tooLarge(limit) : new Error('the client closed the request')));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

/**
 * The body of a request whose declared length the parser has already buffered (a small body
 * usually arrives with its headers), taken from the stream's buffer at once, without a
 * listener: or undefined, to read it as it comes. Nothing is left to discard then, so over the
 * limit is a 413 at once (thrown).
 */
function received(req: IncomingMessage, limit: number): Buffer | undefined {
  const declared = req.headers['content-length'];
  if (declared === undefined || req.readableFlowing !== null || req.readableEnded) return undefined;
  const length = Number(declared);
  if (!Number.isSafeInteger(length) || req.readableLength < length) return undefined;
  if (length > limit) {
    req.resume();
    throw tooLarge(limit);
  }
  const chunks: Buffer[] = [];
  for (let chunk: Buffer | null; (chunk = req.read() as Buffer | null) !== null; ) chunks.push(chunk);
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
}
