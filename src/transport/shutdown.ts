/**
 * Graceful shutdown of long-lived HTTP responses (docs/API.md §10 "Shutdown"). A streaming
 * response (the REST ndjson watch) registers how it ends cleanly; the gateway's shutdown calls
 * every registered ending once, so the client sees the stream end (the chunked terminator)
 * instead of a reset connection. Each gateway's WatchHub holds its own OpenStreams, so gateways
 * sharing a process (the tests) never end each other's streams.
 */
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
