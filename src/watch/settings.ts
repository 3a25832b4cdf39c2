/**
 * Tunables of watch streams (REST, ndjson, GraphQL subscriptions). Defaults suit production;
 * each gateway holds its own copy (WatchHub.settings), which tests and benchmarks shorten with
 * `WatchHub.configure`.
 */
export interface WatchSettings {
  /** A BOOKMARK event carrying the latest position is sent at this interval. */
  bookmarkMs: number;
  /** The caller's `watch` right is checked again at this interval; a revoked right ends the stream (ERROR 403). */
  recheckMs: number;
  /** WebSocket ping interval; a socket that did not answer the previous ping is dropped. */
  pingMs: number;
  /** A consumer whose unsent data stays above this many bytes for `stallMs` is cut off (ERROR 503). */
  softBufferBytes: number;
  stallMs: number;
  /**
   * A consumer that still has more than this many bytes unsent when the next delivery comes is
   * cut off at once (ERROR 503); the delivery itself is not counted (rest/watch.ts, FlowGuard).
   */
  hardBufferBytes: number;
}

export const WATCH_DEFAULTS: Readonly<WatchSettings> = Object.freeze({
  bookmarkMs: 10_000,
  recheckMs: 1000,
  pingMs: 30_000,
  softBufferBytes: 1 << 20,
  stallMs: 1000,
  hardBufferBytes: 8 << 20,
});
