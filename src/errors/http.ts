/**
 * The one mapping of errors to HTTP, below both transports: anything thrown →
 * application/problem+json (RFC 9457) with the error's own headers (WWW-Authenticate,
 * Retry-After, Allow). REST responses, refused WebSocket upgrades and GraphQL's HTTP status
 * (graphql/errors.ts) all use it.
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

export function sendProblem(res: ServerResponse, thrown: unknown, instance: string, log?: (e: unknown) => void): void {
  const err = toApiError(thrown);
  if (err.status >= 500 && log) log(thrown);
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(err.status, { 'content-type': 'application/problem+json', ...errorHeaders(err) });
  res.end(JSON.stringify(toProblem(err, instance)));
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/** Refuses a WebSocket upgrade with a plain HTTP problem response on the raw socket. */
export function rejectUpgrade(socket: Duplex, thrown: unknown, instance: string): void {
  const err = toApiError(thrown);
  const body = JSON.stringify(toProblem(err, instance));
  const extra = Object.entries(errorHeaders(err))
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  socket.end(
    `HTTP/1.1 ${err.status} ${err.title}\r\n${extra}content-type: application/problem+json\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}
