/**
 * The REST door's error mapper (it lives here, in src/errors/): anything thrown →
 * application/problem+json (RFC 9457) with the error's own headers (WWW-Authenticate,
 * Retry-After, Allow), written three ways from the same problem:
 *  - on a ServerResponse (`sendProblem`);
 *  - as raw HTTP/1.1 bytes on a bare socket: Node's unparsable requests, connections over the
 *    per-address cap, refused WebSocket upgrades (`rawProblem`, `rejectUpgrade`);
 *  - as the close code of a WebSocket that ends on an error (`closeCodeOf`): REST watches, and
 *    graphql-ws connections refused (graphql/errors.ts `connectionRefusal`).
 * GraphQL maps its errors in graphql/errors.ts (it takes the HTTP headers from here).
 */
import type { ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { ApiError, MethodNotAllowed, toApiError } from './index.js';

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
  errors?: { field: string; message: string }[];
}

export function toProblem(err: ApiError, instance: string): Problem {
  const problem: Problem = {
    type: `https://svc.run/problems/${err.code.toLowerCase().replace(/_/g, '-')}`,
    title: err.title,
    status: err.status,
    detail: err.detail,
    instance,
  };
  if (err.errors) problem.errors = err.errors;
  return problem;
}

/** Headers an error carries onto the response. */
export function errorHeaders(err: ApiError): Record<string, string> {
  const headers: Record<string, string> = { ...err.headers };
  if (err instanceof MethodNotAllowed && err.allow.length) headers.allow = err.allow.join(', ');
  return headers;
}

/** Answers with the problem of `thrown` (5xx logged through `log`); `headers` are added to the error's own. */
export function sendProblem(
  res: ServerResponse,
  thrown: unknown,
  instance: string,
  log?: (e: unknown) => void,
  headers: Record<string, string> = {},
): void {
  const err = toApiError(thrown);
  if (err.status >= 500 && log) log(thrown);
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = JSON.stringify(toProblem(err, instance));
  res.writeHead(err.status, {
    'content-type': 'application/problem+json',
    'content-length': Buffer.byteLength(body),
    ...errorHeaders(err),
    ...headers,
  });
  res.end(body);
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/** A complete HTTP/1.1 problem response, for writing on a raw socket (`head`: no body, for HEAD). */
export function rawProblem(err: ApiError, instance: string, headers: Record<string, string> = {}, head = false): string {
  const body = JSON.stringify(toProblem(err, instance));
  const extra = Object.entries({ ...errorHeaders(err), ...headers })
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  return (
    `HTTP/1.1 ${err.status} ${err.title}\r\n${extra}content-type: application/problem+json\r\n` +
    `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${head ? '' : body}`
  );
}

/** Refuses a WebSocket upgrade with a plain HTTP problem response on the raw socket. */
export function rejectUpgrade(socket: Duplex, thrown: unknown, instance: string): void {
  socket.end(rawProblem(toApiError(thrown), instance));
}

/** WebSocket close code of a normal end. */
export const NORMAL_CLOSE = 1000;
/** WebSocket close code when the server goes away (graceful shutdown). */
export const GOING_AWAY_CLOSE = 1001;

/**
 * The close code of a WebSocket stream that ends on an error of HTTP status `status`: 4000 +
 * the status (4403, 4410, 4503, …); a normal close (1000) without one.
 */
export const closeCodeOf = (status: number | undefined): number => (status ? 4000 + Math.min(status, 999) : NORMAL_CLOSE);

/** A close reason fits in a control frame: at most 123 bytes; the gateway keeps 100 characters. */
export const closeReason = (message: string | undefined): string => (message ?? '').slice(0, 100);
