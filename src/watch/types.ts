/**
 * The shapes of a watch: what a client asks for (WatchOptions), what it receives (WatchEvent),
 * where a started watch delivers (WatchSink) and the two-step handle the watch verb returns
 * (PreparedWatch: refusals happen before a transport accepts a connection).
 */
import type { Requirement } from '../query/types.js';
import type { ApiObject } from '../store/object.js';
import type { WatchEventType } from '../store/types.js';

export interface WatchOptions {
  labelSelector?: string[];
  fieldSelector?: string[];
  /**
   * Typed requirements (a GraphQL subscription's `where`, graphql/where.ts), ANDed with the
   * selectors and planned as a connection's are (operations/list-page.ts `planRequirements`).
   */
  where?: { labels: Requirement[]; fields: Requirement[] };
  /**
   * Resume after this change-feed position; without it, ADDED for every current match first,
   * then the BOOKMARK that ends the initial events (./encode.ts `initialEventsEnd`).
   */
  resourceVersion?: string;
  /**
   * Periodic BOOKMARKs with the latest position (every `bookmarkMs`). REST sends them only when
   * asked (`allowWatchBookmarks=true`, as Kubernetes); GraphQL subscriptions always. The BOOKMARK
   * ending the initial events does not depend on it.
   */
  bookmarks?: boolean;
  /** The stream ends cleanly (no ERROR) after this many seconds (REST `timeoutSeconds`); 0 or absent: never. */
  timeoutSeconds?: number;
}

export interface WatchEvent {
  type: WatchEventType | 'BOOKMARK' | 'ERROR';
  object: ApiObject | { code: number; message: string };
  resourceVersion: string;
}

/** Where a started watch delivers. `end` is called once, after the last event. */
export interface WatchSink {
  send(e: WatchEvent): void;
  /**
   * Several events at once, in order (optional; otherwise `send` each). Watchers of one
   * selector receive the same array for the same changes: a transport may encode it once.
   * `audience`: about how many watchers receive this same array.
   */
  sendBatch?(events: readonly WatchEvent[], audience: number): void;
  /** The stream ended on the server's side (after an ERROR event, when there is one). */
  end(): void;
}

export interface PreparedWatch {
  /**
   * Subscribes and starts streaming into `sink`. Resolves to a stop function once the stream
   * runs (the initial ADDED events already handed to the sink). Errors after this point arrive
   * as an ERROR event followed by `sink.end()`.
   */
  start(sink: WatchSink): Promise<() => void>;
  /** Gives up a prepared watch that will never start (e.g. the WebSocket handshake failed). */
  close(): void;
}
