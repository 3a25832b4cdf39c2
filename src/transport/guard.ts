/**
 * Connection-level protection of the HTTP server (slowloris, floods, malformed requests):
 *
 *  - headers must arrive within `headersTimeoutMs`, the whole request (body included) within
 *    `requestTimeoutMs` → 408 problem, then the connection is closed. Node enforces both; its
 *    check runs every second here instead of every 30 s.
 *  - an idle keep-alive connection is closed after `keepAliveTimeoutMs`.
 *  - at most `connectionsPerAddress` concurrent connections per client address; a request on a
 *    connection beyond that gets 429 problem and the connection is closed (WebSocket upgrades:
 *    see transport/upgrade.ts).
 *  - requests Node cannot parse (`clientError`) get a problem+json answer: 431 for headers or a
 *    URL over `headerBytes`, 408 for timeouts, 400 otherwise. The answer is written, the
 *    connection half-closed, and what the client still sends is read and discarded for a while,
 *    so the client sees the status instead of a reset.
 *
 * `guardServer` must be called before `listen` and after the request listener is attached.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { ApiError, BadRequest, PayloadTooLarge, RequestTimeout, TooManyRequests } from '../errors/index.js';
import { resolveLimits, type GatewayLimits } from '../limits.js';
import { rawProblem, sendProblem } from '../errors/http.js';

/** How long a refused connection is drained before it is destroyed. */
const LINGER_MS = 5000;

/**
 * Writes `response`, half-closes, and discards what the peer still sends until it closes or
 * LINGER_MS pass (then the socket is destroyed).
 */
export function answerAndLinger(socket: Socket, response: string): void {
  if (socket.destroyed) return;
  socket.removeAllListeners('data');
  socket.on('data', () => undefined);
  socket.on('error', () => undefined);
  const timer = setTimeout(() => socket.destroy(), LINGER_MS).unref();
  socket.once('close', () => clearTimeout(timer));
  socket.once('end', () => socket.destroy());
  if (socket.writable) socket.end(response);
  socket.resume();
}

class HeaderFieldsTooLarge extends ApiError {
  constructor(limit: number) {
    super(
      431,
      'BAD_REQUEST',
      'Request Header Fields Too Large',
      `the request line and headers exceed ${limit} bytes (limit: URL and header size)`,
    );
  }
}

function clientErrorStatus(err: NodeJS.ErrnoException, limits: GatewayLimits): ApiError {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return new HeaderFieldsTooLarge(limits.headerBytes);
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new RequestTimeout(
        `the request was not received in time (limits: headers ${limits.headersTimeoutMs} ms, whole request ${limits.requestTimeoutMs} ms)`,
      );
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return new PayloadTooLarge('the chunk extensions are too large');
    default:
      return new BadRequest('malformed HTTP request');
  }
}

/** What the guard of one server knows of its connections. */
export interface ConnectionGuard {
  /** The 429 for a connection over the per-address cap, if it is one (its requests and upgrades are refused). */
  refusal(socket: object): TooManyRequests | undefined;
}

export function guardServer(server: Server, limits: GatewayLimits = resolveLimits()): ConnectionGuard {
  /** Sockets over the per-address cap: their requests and upgrades are refused with 429. */
  const overCap = new WeakMap<Socket, TooManyRequests>();
  server.headersTimeout = limits.headersTimeoutMs;
  server.requestTimeout = limits.requestTimeoutMs;
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  // Read by Node when the server starts listening (setupConnectionsTracking).
  (server as Server & { connectionsCheckingInterval: number }).connectionsCheckingInterval = 1000;

  const perAddress = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '?';
    const n = (perAddress.get(address) ?? 0) + 1;
    perAddress.set(address, n);
    if (n > limits.connectionsPerAddress) {
      overCap.set(
        socket,
        new TooManyRequests(
          `more than ${limits.connectionsPerAddress} concurrent connections from one address (limit: connections per address)`,
          1,
        ),
      );
    }
    socket.once('close', () => {
      const left = (perAddress.get(address) ?? 1) - 1;
      if (left > 0) perAddress.set(address, left);
      else perAddress.delete(address);
    });
  });

  /**
   * The latest response of each socket; it is in flight while it has not finished. (No
   * listener per request: the check is made only when a client error needs it.)
   */
  const latest = new WeakMap<Socket, ServerResponse>();
  const sending = (socket: Socket) => {
    const res = latest.get(socket);
    return !!res && res.headersSent && !res.writableFinished;
  };
  const answered = new WeakSet<Socket>();
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    if (answered.has(socket)) return;
    answered.add(socket);
    if (err.code === 'ECONNRESET' || !socket.writable || sending(socket)) {
      socket.destroy();
      return;
    }
    // A HEAD request gets no body, even when the request line could not be parsed.
    const raw = (err as { rawPacket?: Buffer }).rawPacket;
    const head = !!raw && raw.subarray(0, 5).toString('latin1') === 'HEAD ';
    answerAndLinger(socket, rawProblem(clientErrorStatus(err, limits), '', {}, head));
  });

  // Requests on connections over the cap are answered before any handler runs.
  const handlers = server.listeners('request') as ((req: IncomingMessage, res: ServerResponse) => void)[];
  server.removeAllListeners('request');
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket;
    latest.set(socket, res);
    const refusal = overCap.get(socket);
    if (refusal) {
      res.shouldKeepAlive = false;
      sendProblem(res, refusal, (req.url ?? '').split('?')[0]!, undefined, { connection: 'close' });
      return;
    }
    for (const handler of handlers) handler.call(server, req, res);
  });
  return { refusal: (socket) => overCap.get(socket as Socket) };
}
