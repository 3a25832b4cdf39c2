/**
 * Watch transports for REST: WebSocket upgrade on a collection path (one JSON text frame per
 * event) and, for plain HTTP clients, `GET …?watch=true` streamed as newline-delimited JSON.
 * Both call operations.watchObjects; an expired resume point becomes an ERROR event with code 410.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { WebSocket } from 'ws';
import { ApiError, toApiError } from '../errors/index.js';
import * as ops from '../operations/index.js';
import type { ModelEntry, OperationContext, WatchEvent, WatchOptions } from '../operations/types.js';
import type { RequestTarget } from '../request/requestinfo.js';

export function watchOptions(url: RequestTarget): WatchOptions {
  const rv = url.searchParams.get('resourceVersion');
  return {
    labelSelector: url.searchParams.getAll('labelSelector'),
    fieldSelector: url.searchParams.getAll('fieldSelector'),
    resourceVersion: rv === null || rv === '' ? undefined : rv,
  };
}

export const errorEvent = (err: ApiError): WatchEvent => ({
  type: 'ERROR',
  object: { code: err.status, message: err.detail },
  resourceVersion: '',
});

/** HTTP streaming watch (ndjson). Errors before the stream starts are normal problem responses. */
export async function streamWatch(
  req: IncomingMessage,
  res: ServerResponse,
  ctx: OperationContext,
  entry: ModelEntry,
  url: RequestTarget,
): Promise<void> {
  const pending: WatchEvent[] = [];
  let started = false;
  const write = (e: WatchEvent) => (started ? res.write(`${JSON.stringify(e)}\n`) : pending.push(e));
  const stop = await ops.watchObjects(ctx, entry, watchOptions(url), write);
  res.writeHead(200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' });
  started = true;
  for (const e of pending) res.write(`${JSON.stringify(e)}\n`);
  await new Promise<void>((resolve) => {
    req.on('close', resolve);
    res.on('close', resolve);
  });
  stop();
}

/** WebSocket watch: the socket is already upgraded; `open` runs the operation. */
export async function socketWatch(socket: WebSocket, open: (send: (e: WatchEvent) => void) => Promise<() => void>): Promise<void> {
  const send = (e: WatchEvent) => {
    if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(e));
  };
  try {
    const stop = await open(send);
    if (socket.readyState !== socket.OPEN) {
      stop();
      return;
    }
    socket.on('close', stop);
  } catch (e) {
    const err = toApiError(e);
    send(errorEvent(err));
    socket.close(err.status === 410 ? 4410 : 4000 + Math.min(err.status, 999), err.detail.slice(0, 100));
  }
}
