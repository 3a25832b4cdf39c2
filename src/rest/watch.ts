/**
 * The sinks of REST watches: for plain HTTP clients, `GET …?watch=true` streamed as
 * newline-delimited JSON (`streamWatch`); for a WebSocket upgrade on a collection path, one JSON
 * text frame per event (`acceptWatchSocket`). Both take a PreparedWatch (the watch verb has
 * already authorized and validated the request, so refusals were plain HTTP errors) and only
 * then accept the connection and start the watch: a refused or malformed upgrade leaves nothing
 * subscribed.
 *
 * Batches: the watchers of one selector receive each read of the change feed as one array of
 * events (WatchSink.sendBatch); its bytes (ndjson lines, or WebSocket text frames, compressed
 * for sockets that agreed permessage-deflate: watch/frames.ts) are built once per array and leave
 * in one write per socket.
 *
 * Parameters (`watchOptions`): `allowWatchBookmarks=true` adds the periodic BOOKMARKs and
 * `timeoutSeconds=N` ends the stream cleanly after N seconds, as in Kubernetes; the BOOKMARK
 * ending the initial events comes whatever they say.
 *
 * Resource safety: a consumer whose unsent data stays above `softBufferBytes` for `stallMs`, or
 * exceeds `hardBufferBytes` when the next delivery comes, gets ERROR 503 and is disconnected
 * (its subscription ends at once, its socket within a second); WebSockets are pinged every
 * `pingMs` (the gateway's WatchHub settings).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import { closeCodeOf, closeReason } from '../errors/http.js';
import { BadRequest, Unavailable, toApiError } from '../errors/index.js';
import type { OpenStreams } from '../transport/shutdown.js';
import type { BoundedWebSocketServer } from '../transport/websocket.js';
import type { RequestTarget } from '../requestinfo/requestinfo.js';
import { encodeWatchEvent, encodeWatchEventBytes, errorEvent } from '../watch/encode.js';
import { frameModeOf, type FrameEncoder, type FrameMode } from '../watch/frames.js';
import type { WatchSettings } from '../watch/settings.js';
import type { PreparedWatch, WatchEvent, WatchOptions } from '../watch/types.js';

/** What the sinks need of the gateway's WatchHub. */
export interface SinkParts {
  settings: Readonly<WatchSettings>;
  frames: FrameEncoder;
  streams: OpenStreams;
}

/** The largest `timeoutSeconds` a REST watch takes (one day); more is a 400. */
export const MAX_TIMEOUT_SECONDS = 86_400;

/**
 * The watch options of a REST request's query string (400 on a malformed one):
 *  - `allowWatchBookmarks`: `true`/`1` asks for periodic BOOKMARKs, `false`/`0`/absent not
 *    (Kubernetes' default); anything else is a 400 rather than a silent no;
 *  - `timeoutSeconds`: an integer 0–MAX_TIMEOUT_SECONDS; the stream then ends cleanly after that
 *    many seconds (0 or absent: no timeout, Kubernetes' 0 being "the server's default").
 */
export function watchOptions(url: RequestTarget): WatchOptions {
  const q = url.searchParams;
  const rv = q.get('resourceVersion');
  return {
    labelSelector: q.getAll('labelSelector'),
    fieldSelector: q.getAll('fieldSelector'),
    resourceVersion: rv === null || rv === '' ? undefined : rv,
    bookmarks: booleanParam(q, 'allowWatchBookmarks'),
    timeoutSeconds: timeoutParam(q.get('timeoutSeconds')),
  };
}

function booleanParam(q: URLSearchParams, name: string): boolean {
  const v = q.get(name);
  if (v === null || v === '' || v === 'false' || v === '0') return false;
  if (v === 'true' || v === '1') return true;
  throw new BadRequest(`${name} must be true or false, not ${JSON.stringify(v.slice(0, 40))}`);
}

function timeoutParam(v: string | null): number | undefined {
  if (v === null || v === '') return undefined;
  const n = /^\d{1,6}$/.test(v) ? Number(v) : NaN;
  if (!(n <= MAX_TIMEOUT_SECONDS)) {
    throw new BadRequest(`timeoutSeconds must be an integer from 0 to ${MAX_TIMEOUT_SECONDS}, not ${JSON.stringify(v.slice(0, 40))}`);
  }
  return n;
}

const slowConsumer = () =>
  new Unavailable('The watcher fell too far behind (its unsent events exceeded the buffer limit); watch again from the last resourceVersion.');

/**
 * Watches the bytes a consumer has not taken yet; calls `cut` once when it is too slow. The
 * hard limit is checked before each delivery is written (`admit`), against what is still unsent
 * from earlier ones: one delivery may hold up to the feed's read budget (8 MiB of objects, e.g.
 * a resumed watch or a feed catching up), and a reader that has taken everything before it is
 * not behind. Checked after the write, such a delivery alone cut healthy readers. The soft limit
 * (`check`, after each write) then gives every reader `stallMs` to take it. So a consumer holds
 * at most the hard limit plus one delivery, as graphql-ws subscribers (transport/send-guard.ts).
 */
class FlowGuard {
  private stallTimer: NodeJS.Timeout | undefined;
  private done = false;
  constructor(
    private readonly settings: Readonly<WatchSettings>,
    private readonly buffered: () => number,
    private readonly cut: () => void,
  ) {}

  /** Before a write: false (and the consumer cut) when what is still unsent exceeds the hard limit. */
  admit(): boolean {
    if (this.done) return true; // the ERROR event of the cut itself
    if (this.buffered() <= this.settings.hardBufferBytes) return true;
    this.fire();
    return false;
  }

  /** After a write: starts the stall clock when the unsent data is above the soft limit. */
  check(): void {
    if (this.done) return;
    const { softBufferBytes, stallMs } = this.settings;
    if (this.buffered() <= softBufferBytes || this.stallTimer) return;
    this.stallTimer = setTimeout(() => {
      this.stallTimer = undefined;
      if (this.buffered() > softBufferBytes) this.fire();
    }, stallMs);
    this.stallTimer.unref();
  }

  private fire(): void {
    this.stop();
    this.done = true;
    this.cut();
  }

  stop(): void {
    if (this.stallTimer) clearTimeout(this.stallTimer);
    this.stallTimer = undefined;
  }
}

/** HTTP streaming watch (ndjson). Errors before the stream starts were normal problem responses. */
export async function streamWatch(hub: SinkParts, req: IncomingMessage, res: ServerResponse, prepared: PreparedWatch): Promise<void> {
  // Headers go out at once, so clients see the stream open before the first event.
  res.writeHead(200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' });
  res.flushHeaders();
  let stop = () => {};
  let finished = false;
  const finish = () => {
    if (finished) return;
    finished = true;
    flow.stop();
    stop();
    res.end();
  };
  const emit = (e: WatchEvent) => {
    if (finished || res.destroyed) return;
    res.write(`${encodeWatchEvent(e)}\n`);
    flow.check();
  };
  // One delivery, one admission (FlowGuard): an event, or a batch however it is written.
  const write = (e: WatchEvent) => {
    if (flow.admit()) emit(e);
  };
  const writeBatch = (events: readonly WatchEvent[]) => {
    if (finished || res.destroyed || !flow.admit()) return;
    const bytes = hub.frames.watchLines(events);
    if (!bytes) {
      for (const e of events) emit(e);
      return;
    }
    res.write(bytes);
    flow.check();
  };
  const flow = new FlowGuard(
    hub.settings,
    () => res.writableLength,
    () => {
      write(errorEvent(slowConsumer()));
      finish();
      setTimeout(() => res.destroy(), 1000).unref();
    },
  );
  const closed = new Promise<void>((resolve) => {
    req.on('close', resolve);
    res.on('close', resolve);
  });
  // The gateway shutting down ends the stream cleanly.
  const unregister = hub.streams.add(finish);
  try {
    stop = await prepared.start({ send: write, sendBatch: writeBatch, end: finish });
  } catch (e) {
    write(errorEvent(toApiError(e)));
    finish();
    unregister();
    return;
  }
  // Ended while starting (shutdown): the subscription that start returned is given up too.
  if (finished) stop();
  else await closed;
  finish();
  unregister();
}

/**
 * The REST WebSocket watch after the verb prepared it: completes the WebSocket handshake, and
 * only then subscribes. A failed handshake never reaches the subscription.
 */
export function acceptWatchSocket(
  hub: SinkParts,
  wss: BoundedWebSocketServer,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  prepared: PreparedWatch,
): void {
  // A handshake that fails never calls back: give the prepared watch up when the socket goes.
  let accepted = false;
  socket.once('close', () => {
    if (!accepted) prepared.close();
  });
  wss.accept(req, socket, head, (ws, _req, extensions) => {
    accepted = true;
    void runSocket(hub, ws, socket as Socket, prepared, frameModeOf(extensions));
  });
}

/**
 * `raw` is the upgraded connection the server handed us (the socket ws now writes its frames
 * to): its own cork/uncork batch a turn's events into one write, and ready-made frames are
 * written to it directly.
 */
async function runSocket(hub: SinkParts, ws: WebSocket, raw: Socket, prepared: PreparedWatch, mode: FrameMode): Promise<void> {
  let stop = () => {};
  let finished = false;
  let lastError: WatchEvent | undefined;
  let alive = true;
  const ping = setInterval(() => {
    if (!alive) return ws.terminate();
    alive = false;
    ws.ping();
  }, hub.settings.pingMs);
  ping.unref();
  ws.on('pong', () => (alive = true));

  const finish = () => {
    if (finished) return;
    finished = true;
    clearInterval(ping);
    flow.stop();
    stop();
    if (ws.readyState === ws.OPEN) {
      const obj = lastError?.object as { code?: number; message?: string } | undefined;
      ws.close(closeCodeOf(obj?.code), closeReason(obj?.message));
    }
  };
  // Events handed over in one turn of the event loop (a poll of the feed delivers its whole
  // batch synchronously) leave in one write: the socket is corked until the next tick.
  let corked = false;
  const uncork = () => {
    corked = false;
    raw.uncork();
  };
  const emit = (e: WatchEvent) => {
    if (finished || ws.readyState !== ws.OPEN) return;
    if (e.type === 'ERROR') lastError = e;
    if (!corked) {
      corked = true;
      raw.cork();
      process.nextTick(uncork);
    }
    // The same bytes for every socket that sends this event, as a text frame. Never compressed
    // by ws: the shared compressed batches rely on it (watch/frames.ts).
    ws.send(encodeWatchEventBytes(e), { binary: false, compress: false });
    flow.check();
  };
  // One delivery, one admission (FlowGuard): an event, or a batch however it is written.
  const send = (e: WatchEvent) => {
    if (flow.admit()) emit(e);
  };
  // A batch goes straight to the socket as ready-made frames: the same Buffer for every socket
  // of the selector (and of its frame mode). ws's sender never holds anything back here (it
  // is never asked to compress, and it sends only whole frames), so the order on the wire is
  // the order of the calls.
  const sendBatch = (events: readonly WatchEvent[], audience: number) => {
    if (finished || ws.readyState !== ws.OPEN || !flow.admit()) return;
    const bytes = hub.frames.watchFrames(events, mode, audience);
    if (!bytes) {
      for (const e of events) emit(e);
      return;
    }
    raw.write(bytes);
    flow.check();
  };
  const flow = new FlowGuard(
    hub.settings,
    () => ws.bufferedAmount,
    () => {
      send(errorEvent(slowConsumer()));
      finish();
      setTimeout(() => ws.terminate(), 1000).unref();
    },
  );
  ws.on('close', finish);
  try {
    stop = await prepared.start({ send, sendBatch, end: finish });
  } catch (e) {
    send(errorEvent(toApiError(e)));
    finish();
    return;
  }
  if (finished || ws.readyState !== ws.OPEN) {
    stop();
    finish();
  }
}
