/**
 * The REST door's WebSocket watch: an upgrade on a collection path. The pipeline has already
 * authenticated and authorized the caller (pipeline/pipeline.ts `upgrade`: the same admission as
 * every request); this door finds the collection, refuses unknown query parameters, opens the
 * watch through the verb (operations/watch.ts) and hands the socket to its sink (rest/watch.ts).
 * It owns the REST watch sockets, so shutdown closes them here.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { GOING_AWAY_CLOSE } from '../errors/http.js';
import { NotFound } from '../errors/index.js';
import * as ops from '../operations/index.js';
import type { OperationContext } from '../operations/types.js';
import type { Registry } from '../registry/registry.js';
import { COLLECTION_GET_PARAMS, rejectUnknownParams } from '../requestinfo/query-params.js';
import type { RequestInfo, RequestTarget } from '../requestinfo/requestinfo.js';
import { pickProtocol } from '../transport/browser.js';
import { boundedWebSocketServer } from '../transport/websocket.js';
import type { WatchHub } from '../watch/hub.js';
import { resolveEntry } from './handler.js';
import { acceptWatchSocket, watchOptions } from './watch.js';

export interface RestWatchSockets {
  /** Opens the watch an admitted upgrade asks for, or throws (404, 400, …) before the handshake. */
  accept(operations: OperationContext, info: RequestInfo, target: RequestTarget, req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void>;
  /** Shutdown, first step: every REST WebSocket watch closes with 1001 "server shutting down". */
  goingAway(): void;
  /** Shutdown, last step: drops the sockets left. */
  close(): void;
}

export function restWatchSockets(registry: Registry, watches: WatchHub): RestWatchSockets {
  // The REST watch protocol takes no messages from the client: 4 KiB bounds what a compressed
  // one can inflate to (ws checks the inflated size).
  const sockets = boundedWebSocketServer({ deflate: true, maxPayload: 4096, handleProtocols: pickProtocol });
  return {
    async accept(operations, info, target, req, socket, head) {
      if (!info.isResourceRequest || info.name) throw new NotFound(`no watch endpoint at ${target.pathname}`);
      const entry = resolveEntry(registry, info);
      rejectUnknownParams(target.searchParams, COLLECTION_GET_PARAMS);
      const prepared = await ops.prepareWatch(operations, entry, watchOptions(target));
      acceptWatchSocket(watches, sockets, req, socket, head, prepared);
    },
    goingAway() {
      for (const ws of sockets.clients) ws.close(GOING_AWAY_CLOSE, 'server shutting down');
    },
    close() {
      for (const ws of sockets.clients) ws.terminate();
      sockets.close();
    },
  };
}
