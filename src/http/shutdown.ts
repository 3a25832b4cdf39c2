/**
 * Graceful shutdown of long-lived HTTP responses (docs/API.md §10 "Shutdown"). A streaming
 * response (the REST ndjson watch) registers how it ends cleanly; the gateway's shutdown calls
 * every registered ending once, so the client sees the stream end (the chunked terminator)
 * instead of a reset connection. Requests are tied to their gateway's registry by the pipeline
 * (`attach`), so gateways sharing a process (the tests) never end each other's streams.
 */
import type { IncomingMessage } from 'node:http';

export class OpenStreams {
  private readonly enders = new Set<() => void>();
  private closing = false;

  /** Registers `end` (called at most once, at shutdown); returns the function that unregisters it. */
  add(end: () => void): () => void {
    if (this.closing) {
      // Opened while the gateway drains: ended at once.
      setImmediate(end);
      return () => {};
    }
    this.enders.add(end);
    return () => this.enders.delete(end);
  }

  /** Ends every open stream (and any opened later). */
  endAll(): void {
    this.closing = true;
    const all = [...this.enders];
    this.enders.clear();
    for (const end of all) end();
  }
}

const byRequest = new WeakMap<IncomingMessage, OpenStreams>();

/** Ties a (streaming) request to its gateway's registry. */
export function attach(req: IncomingMessage, streams: OpenStreams): void {
  byRequest.set(req, streams);
}

/** Registers how the response to `req` ends cleanly on shutdown; returns the unregister function. */
export function onShutdown(req: IncomingMessage, end: () => void): () => void {
  return byRequest.get(req)?.add(end) ?? (() => {});
}
