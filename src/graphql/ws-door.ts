/**
 * GraphQL over WebSocket (`graphql-ws`) on `/graphql`: the upgrade, the caller of each socket,
 * and each operation run through the same envelop chain as HTTP (server.ts builds it).
 *
 * A socket's caller is decided once, at `connection_init` (`socketCaller`): the
 * `connectionParams.authorization` when given, else the upgrade request's `Authorization` header
 * or token sub-protocol (transport/browser helpers), else anonymous. Wrong credentials refuse the
 * upgrade (401) or close the socket (4401). The session guard closes a socket whose credentials
 * stop holding (a revoked token, a disabled user: docs/API.md §2), checked before each operation
 * and as often as watches re-check.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { GraphQLError, type DocumentNode, type ExecutionArgs } from 'graphql';
import { handleProtocols, makeServer } from 'graphql-ws';
import type { WebSocket } from 'ws';
import type { Authenticate } from '../authentication/authenticate.js';
import { rejectUpgrade } from '../errors/http.js';
import type { Caller } from '../identity/authorizer.js';
import { serveGraphQLWs } from '../transport/graphql-ws-transport.js';
import { boundedWebSocketServer } from '../transport/websocket.js';
import { upgradeAuthorization } from '../transport/browser.js';
import type { WatchHub } from '../watch/hub.js';
import { connectionRefusal, withoutHttp } from './errors.js';
import { operationArgs, validDocument, type Yoga } from './node-http.js';
import type { PersistedOperations } from './persisted.js';
import { SessionGuard } from './sessions.js';

export interface WsDoorOptions {
  yoga: Yoga;
  authenticate: Authenticate;
  persisted: PersistedOperations;
  /** The largest message a client may send (GatewayLimits.wsMessageBytes). */
  maxPayload: number;
  watches?: WatchHub;
}

export interface WsDoor {
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
  /** Completes every running subscription, then closes the sockets (1001). */
  endSubscriptions(): Promise<void>;
  close(): Promise<void>;
}

export function graphqlWsDoor({ yoga, authenticate, persisted, maxPayload, watches }: WsDoorOptions): WsDoor {
  const getEnveloped = yoga.getEnveloped; // read once: see node-http.ts
  const wss = boundedWebSocketServer({ handleProtocols, maxPayload });
  /** Caller from the upgrade request's credentials (when it had any). */
  const upgradeCallers = new WeakMap<WebSocket, Caller>();
  /** Caller of an acknowledged connection. */
  const callers = new WeakMap<WebSocket, Caller>();
  /** The envelop functions of each operation, keyed by its execution arguments. */
  const engines = new WeakMap<ExecutionArgs, Pick<ReturnType<Yoga['getEnveloped']>, 'execute' | 'subscribe'>>();
  /** Open graphql-ws connections, with their running subscriptions (for shutdown). */
  const connections = new Set<{ subscriptions: Record<string, unknown> }>();
  /** Sockets whose credentials stop holding are closed (4401), checked as often as watches re-check. */
  const sessions = new SessionGuard(() => watches?.settings.recheckMs ?? 1000);

  /** The caller of a socket at `connection_init` (see the header); throws on wrong credentials. */
  const socketCaller = async (socket: WebSocket, request: IncomingMessage, params: Record<string, unknown> | undefined) => {
    const param = params?.authorization ?? params?.Authorization;
    if (typeof param === 'string') return authenticate(param, { address: request.socket.remoteAddress });
    return upgradeCallers.get(socket) ?? authenticate(undefined);
  };

  const wsServer = serveGraphQLWs(
    makeServer<Record<string, unknown> | undefined, { socket: WebSocket; request: IncomingMessage }>({
      onConnect: async (ctx) => {
        try {
          const caller = await socketCaller(ctx.extra.socket, ctx.extra.request, ctx.connectionParams);
          callers.set(ctx.extra.socket, caller);
          sessions.track(ctx.extra.socket, caller);
          connections.add(ctx);
          return true;
        } catch (err) {
          const { code, reason } = connectionRefusal(err);
          ctx.extra.socket.close(code, reason);
          return false;
        }
      },
      onSubscribe: async (ctx, _id, payload) => {
        const caller = callers.get(ctx.extra.socket)!;
        const revoked = await sessions.refusal(ctx.extra.socket, caller);
        if (revoked) return revoked;
        const enveloped = getEnveloped({ req: ctx.extra.request, socket: ctx.extra.socket, params: payload, caller });
        let document;
        try {
          document = validDocument(enveloped, persisted.resolve(payload) ?? '');
        } catch (err) {
          return [err instanceof GraphQLError ? err : new GraphQLError('Syntax error.')];
        }
        if (Array.isArray(document)) return document as readonly GraphQLError[];
        const args = await operationArgs(enveloped, document as DocumentNode, payload);
        engines.set(args, { execute: enveloped.execute, subscribe: enveloped.subscribe });
        return args;
      },
      onClose: (ctx) => {
        connections.delete(ctx);
        sessions.untrack(ctx.extra.socket);
      },
      // Refusals carry their HTTP status for yoga; a WebSocket message does not.
      onError: (_ctx, _id, _payload, errors) => withoutHttp(errors),
      onNext: (_ctx, _id, _payload, _args, result) => (result.errors ? { ...result, errors: withoutHttp(result.errors) } : undefined),
      execute: (args) => engines.get(args)!.execute(args) as never,
      subscribe: (args) => engines.get(args)!.subscribe(args) as never,
    }),
    wss,
    { sendGuard: watches?.sendGuard },
  );

  return {
    handleUpgrade(req, socket, head) {
      void (async () => {
        let caller: Caller | undefined;
        try {
          // The Authorization header, or a browser's token sub-protocol (transport/browser.ts).
          const header = upgradeAuthorization(req);
          if (header !== undefined) caller = await authenticate(header, { address: req.socket.remoteAddress });
        } catch (err) {
          rejectUpgrade(socket, err, '/graphql');
          return;
        }
        wss.accept(req, socket, head, (ws) => {
          if (caller) upgradeCallers.set(ws, caller);
          wss.emit('connection', ws, req);
        });
      })();
    },
    async endSubscriptions() {
      const ending: Promise<unknown>[] = [];
      for (const ctx of connections) {
        for (const sub of Object.values(ctx.subscriptions)) {
          const end = (sub as AsyncIterator<unknown> | null)?.return;
          if (typeof end === 'function') ending.push(Promise.resolve(end.call(sub)).catch(() => undefined));
        }
      }
      // graphql-ws sends `complete` as each iteration ends; give those messages a moment to leave.
      await Promise.race([Promise.all(ending), new Promise((r) => setTimeout(r, 1000).unref())]);
      await new Promise((r) => setTimeout(r, 50));
      for (const ws of wss.clients) ws.close(1001, 'server shutting down');
    },
    async close() {
      sessions.stop();
      await wsServer.dispose();
    },
  };
}
