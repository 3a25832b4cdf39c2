/**
 * The WebSocket servers of the gateway (REST watch, graphql-ws): messages from clients are
 * bounded by `maxPayload` (the gateway's wsMessageBytes for graphql-ws; a larger one closes the socket with 1009, "message too
 * big"), and a protocol error on one socket (such as that one) closes that socket instead of
 * surfacing as an uncaught exception. Such an error is the client's doing: nothing logs it
 * (graphql-ws's sockets are served by ./graphql-ws-transport.ts, which adds no error listener;
 * a log any client could flood).
 *
 * The REST watch server also agrees permessage-deflate (RFC 7692) when a client offers it, so
 * that batches can be sent compressed, once for all sockets (watch/frames.ts). ws itself
 * then compresses nothing (every send passes `compress: false`), so no socket owns a deflate
 * stream; the extension's parameters as agreed are handed to `accept`'s callback.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';

export interface WebSocketServerOptions {
  /**
   * Chooses the sub-protocol answered to the client (the caller's policy: the gateway never
   * echoes a browser's token sub-protocol, ./browser.ts `pickProtocol`).
   */
  handleProtocols: (protocols: Set<string>) => string | false;
  /** Largest message a client may send (bytes). */
  maxPayload: number;
  /** Agree permessage-deflate when offered (the gateway compresses only where it chooses to). */
  deflate?: boolean;
}

/**
 * A WebSocketServer (noServer) with the gateway's bounds. The extension parameters each upgrade
 * agreed are kept per server, and handed to `accept`'s callback.
 */
export class BoundedWebSocketServer extends WebSocketServer {
  private readonly agreed = new WeakMap<IncomingMessage, string>();

  constructor(options: WebSocketServerOptions) {
    const { maxPayload, deflate = false, handleProtocols } = options;
    super({
      noServer: true,
      maxPayload,
      // A client's own messages are decompressed with a fresh window each (the watch protocol
      // expects none from it).
      perMessageDeflate: deflate ? { clientNoContextTakeover: true } : false,
      // graphql-ws installs its own choice over this one.
      handleProtocols,
    });
    if (deflate) {
      this.on('headers', (headers: string[], req: IncomingMessage) => {
        const h = headers.find((line) => /^sec-websocket-extensions:/i.test(line));
        if (h) this.agreed.set(req, h.slice(h.indexOf(':') + 1).trim());
      });
    }
  }

  /**
   * Completes a WebSocket upgrade and hands the socket to `done`, with the
   * `Sec-WebSocket-Extensions` value the server answered ('' for none). Every socket of the
   * gateway is accepted through here.
   */
  accept(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    done: (ws: WebSocket, req: IncomingMessage, extensions: string) => void,
  ): void {
    this.handleUpgrade(req, socket, head, (ws, request) => {
      // ws has already sent the close frame (1009, 1002, …); nothing else to do.
      ws.on('error', () => undefined);
      done(ws, request, this.agreed.get(request) ?? '');
    });
  }
}

export function boundedWebSocketServer(options: WebSocketServerOptions): BoundedWebSocketServer {
  return new BoundedWebSocketServer(options);
}
