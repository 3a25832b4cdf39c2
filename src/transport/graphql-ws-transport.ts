/**
 * graphql-ws's protocol server (`makeServer`, which knows no sockets) served on the sockets of a
 * BoundedWebSocketServer. graphql-ws's own `useServer` would do the same, but it sends with
 * `ws.send` directly and logs every socket error to the console; this adapter is the public way
 * to give the protocol guarded sends (./send-guard.ts: slow consumers are cut) and to leave a
 * client's protocol errors out of the log (ws closes such a socket itself).
 *
 * The rest follows `useServer`: a ping every `keepAliveMs` (a socket whose pong does not come
 * within the next interval is terminated), an error thrown while handling a message closes the
 * socket with 4500, and the protocol server hears of every close.
 */
import type { IncomingMessage } from 'node:http';
import { CloseCode, DEPRECATED_GRAPHQL_WS_PROTOCOL, type Server } from 'graphql-ws';
import type { WebSocket } from 'ws';
import { guardedSender, type SendGuardSettings } from './send-guard.js';
import type { BoundedWebSocketServer } from './websocket.js';

export interface SocketExtra {
  socket: WebSocket;
  request: IncomingMessage;
}

export interface GraphQLWsTransportOptions {
  /** Ping interval, and how long a pong may take (graphql-ws's default: 12 s). */
  keepAliveMs?: number;
  /** The slow-consumer guard's settings (the gateway's WatchHub holds them). */
  sendGuard?: Readonly<SendGuardSettings>;
}

/** A close reason must fit a control frame; a longer one is replaced. */
const fitReason = (reason: string, whenTooLong: string) => (reason.length < 124 ? reason : whenTooLong);

export function serveGraphQLWs<E extends SocketExtra>(
  server: Server<E>,
  wss: BoundedWebSocketServer,
  options: GraphQLWsTransportOptions = {},
): { dispose(): Promise<void> } {
  const { keepAliveMs = 12_000, sendGuard } = options;
  const isProd = process.env.NODE_ENV === 'production';
  const internalError = (err: unknown) =>
    isProd ? 'Internal server error' : fitReason(err instanceof Error ? err.message : String(err), 'Internal server error');

  wss.on('connection', (socket: WebSocket, request: IncomingMessage) => {
    let pongWait: NodeJS.Timeout | null = null;
    const pingInterval =
      keepAliveMs > 0 && Number.isFinite(keepAliveMs)
        ? setInterval(() => {
            if (socket.readyState !== socket.OPEN) return;
            pongWait = setTimeout(() => socket.terminate(), keepAliveMs);
            socket.once('pong', () => {
              if (pongWait) clearTimeout(pongWait);
              pongWait = null;
            });
            socket.ping();
          }, keepAliveMs)
        : null;
    const closed = server.opened(
      {
        protocol: socket.protocol,
        send: guardedSender(socket, sendGuard),
        close: (code, reason) => socket.close(code, reason),
        onMessage: (cb) =>
          socket.on('message', async (event) => {
            try {
              await cb(String(event));
            } catch (err) {
              console.error('Internal error occurred during message handling. Please check your implementation.', err);
              socket.close(CloseCode.InternalServerError, internalError(err));
            }
          }),
      },
      { socket, request } as E,
    );
    socket.once('close', (code, reason) => {
      if (pongWait) clearTimeout(pongWait);
      if (pingInterval) clearInterval(pingInterval);
      if (!isProd && code === CloseCode.SubprotocolNotAcceptable && socket.protocol === DEPRECATED_GRAPHQL_WS_PROTOCOL) {
        console.warn(`Client provided the unsupported and deprecated subprotocol "${socket.protocol}" used by subscriptions-transport-ws.`);
      }
      void closed(code, String(reason));
    });
  });

  return {
    async dispose() {
      for (const client of wss.clients) client.close(1001, 'Going away');
      wss.removeAllListeners();
      await new Promise<void>((resolve, reject) => wss.close((err) => (err ? reject(err) : resolve())));
    },
  };
}
