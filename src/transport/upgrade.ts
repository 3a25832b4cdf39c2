/**
 * Refuses WebSocket upgrade requests the gateway will not accept, with a problem+json answer
 * (the `ws` library would answer them with text/html): connections over the per-address cap
 * (429), a method other than GET (405), an `Upgrade` other than `websocket` such as `h2c` (400),
 * a missing or malformed `Sec-WebSocket-Key` (400) and an unsupported `Sec-WebSocket-Version`
 * (400 with the supported versions). Call it first in the server's `upgrade` handler.
 */
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { BadRequest, MethodNotAllowed, type ApiError } from '../errors/index.js';
import { rawProblem } from '../errors/http.js';
import { answerAndLinger, type ConnectionGuard } from './guard.js';

const KEY = /^[+/0-9A-Za-z]{22}==$/;

function problemOf(req: IncomingMessage, guard: ConnectionGuard): { err: ApiError; headers?: Record<string, string> } | undefined {
  const capped = guard.refusal(req.socket);
  if (capped) return { err: capped };
  if (req.method !== 'GET') return { err: new MethodNotAllowed(`a WebSocket upgrade must use GET, not ${req.method}`, ['GET']), headers: { allow: 'GET' } };
  const upgrade = (req.headers.upgrade ?? '').trim().toLowerCase();
  if (upgrade !== 'websocket') {
    return { err: new BadRequest(`unsupported upgrade "${req.headers.upgrade ?? ''}"; only "websocket" is served`) };
  }
  const key = req.headers['sec-websocket-key'];
  if (typeof key !== 'string' || !KEY.test(key.trim())) return { err: new BadRequest('missing or invalid Sec-WebSocket-Key header') };
  const version = Number(req.headers['sec-websocket-version']);
  if (version !== 13 && version !== 8) {
    return { err: new BadRequest('unsupported Sec-WebSocket-Version; use 13'), headers: { 'sec-websocket-version': '13, 8' } };
  }
  return undefined;
}

/** True when the upgrade was refused (answered and closed); the caller must then stop. */
export function refuseBadUpgrade(req: IncomingMessage, socket: Duplex, guard: ConnectionGuard): boolean {
  const problem = problemOf(req, guard);
  if (!problem) return false;
  const path = (req.url ?? '').split('?')[0]!;
  answerAndLinger(socket as Socket, rawProblem(problem.err, path, problem.headers));
  return true;
}
