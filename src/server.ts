/**
 * Composition root: configuration → store adapter → registry (platform kinds + plugins) →
 * authenticator/authorizer → HTTP server mounting REST, GraphQL and watch.
 * The only module that knows which store adapter runs.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { pino, type Logger } from 'pino';
import { WebSocketServer } from 'ws';
import { createAuthenticator } from './auth/authenticate.js';
import type { Config } from './config.js';
import { BadRequest, NotFound, toApiError, Unavailable } from './errors/index.js';
import { createGraphQL } from './graphql/index.js';
import * as ops from './operations/index.js';
import type { OperationContext, WatchEvent } from './operations/types.js';
import { loadPlugins } from './plugins/loader.js';
import { allowAll, type Authorizer } from './rbac/authorizer.js';
import { PLATFORM_MODELS } from './registry/platform.js';
import { Registry } from './registry/registry.js';
import { parseRequestInfo, parseTarget } from './request/requestinfo.js';
import { handleResource, resolveEntry } from './rest/handler.js';
import { rejectUpgrade, sendJson, sendProblem } from './rest/problem.js';
import { socketWatch, watchOptions } from './rest/watch-stream.js';
import { createEmbeddedStore } from './store/embedded/index.js';
import { createMongoStore } from './store/mongo/index.js';
import type { Store } from './store/types.js';

export interface Gateway {
  url: string;
  registry: Registry;
  store: Store;
  adminUsername: string;
  adminPassword: string;
  /** True when the admin password was generated at this start (print it once). */
  generatedPassword: boolean;
  close(): Promise<void>;
}

export interface GatewayOptions {
  logger?: Logger;
  /** Replaces the authorizer (the RBAC issue plugs the real one in; tests use deny-some). */
  authorizer?: Authorizer;
}

export function openStore(config: Config): Promise<Store> {
  return config.mongodbUrl ? createMongoStore({ url: config.mongodbUrl }) : createEmbeddedStore({ dataDir: config.dataDir });
}

const HEALTH_TIMEOUT_MS = 3000;

export async function startGateway(config: Config, options: GatewayOptions = {}): Promise<Gateway> {
  const log = options.logger ?? pino({ level: config.logLevel });
  const authorizer = options.authorizer ?? allowAll;
  const generatedPassword = !config.adminPassword;
  const adminPassword = config.adminPassword ?? randomBytes(12).toString('base64url');
  const authenticate = createAuthenticator({ username: config.adminUsername, password: adminPassword });

  const store = await openStore(config);
  const registry = new Registry(store);
  const yogaLog = log.child({ component: 'graphql' });
  const text = (args: unknown[]) => args.map((a) => (a instanceof Error ? a.stack : typeof a === 'string' ? a : JSON.stringify(a))).join(' ');
  const graphql = createGraphQL({
    registry,
    authorizer,
    authenticate,
    logging: {
      debug: (...a: unknown[]) => yogaLog.debug(text(a)),
      info: (...a: unknown[]) => yogaLog.info(text(a)),
      warn: (...a: unknown[]) => yogaLog.warn(text(a)),
      error: (...a: unknown[]) => yogaLog.error(text(a)),
    },
  });
  for (const { decl, opts } of PLATFORM_MODELS) await registry.register(decl, opts);
  await loadPlugins(config.pluginsDir, registry, log);

  const logError = (e: unknown) => log.error({ err: e instanceof Error ? e.stack : String(e) }, 'request failed');

  async function health(res: ServerResponse): Promise<void> {
    try {
      await Promise.race([
        store.ping(),
        new Promise((_, reject) => setTimeout(() => reject(new Unavailable()), HEALTH_TIMEOUT_MS).unref()),
      ]);
      sendJson(res, 200, { status: 'ok', store: store.kind });
    } catch {
      sendProblem(res, new Unavailable(), '/healthz');
    }
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = parseTarget(req.url);
    try {
      if (url.pathname === '/healthz') return await health(res);
      if (url.pathname === '/graphql') return await graphql.handle(req, res);
      const caller = await authenticate(req.headers.authorization);
      const info = parseRequestInfo(req.method ?? 'GET', url.pathname);
      if (info.malformed) throw new BadRequest(info.malformed);
      if (!info.isResourceRequest) throw new NotFound(`no route for ${req.method} ${url.pathname}`);
      const ctx: OperationContext = { caller, authorizer };
      await handleResource(req, res, url, info, registry, ctx);
    } catch (e) {
      sendProblem(res, e, url.pathname, logError);
    }
  }

  const watchSockets = new WebSocketServer({ noServer: true });

  async function upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const url = parseTarget(req.url);
    if (url.pathname === '/graphql') return graphql.handleUpgrade(req, socket, head);
    try {
      const caller = await authenticate(req.headers.authorization);
      const info = parseRequestInfo('GET', url.pathname, { watch: true });
      if (info.malformed) throw new BadRequest(info.malformed);
      if (!info.isResourceRequest || info.name) throw new NotFound(`no watch endpoint at ${url.pathname}`);
      const entry = resolveEntry(registry, info);
      const ctx: OperationContext = { caller, authorizer };
      // Open the watch before accepting the socket so denials and bad selectors are HTTP errors.
      const early: WatchEvent[] = [];
      let sink: (e: WatchEvent) => void = (e) => early.push(e);
      const stop = await ops.watchObjects(ctx, entry, watchOptions(url), (e) => sink(e));
      watchSockets.handleUpgrade(req, socket, head, (ws) => {
        void socketWatch(ws, async (send) => {
          for (const e of early) send(e);
          sink = send;
          return stop;
        });
      });
    } catch (e) {
      const err = toApiError(e);
      if (err.status === 410) {
        // Expired resume point: accept, send an ERROR event with code 410, close (CONTRACT §4).
        watchSockets.handleUpgrade(req, socket, head, (ws) => void socketWatch(ws, () => Promise.reject(err)));
        return;
      }
      if (err.status >= 500) logError(e);
      rejectUpgrade(socket, err, url.pathname);
    }
  }

  const server = createServer((req, res) => void handle(req, res));
  server.on('upgrade', (req, socket, head) => void upgrade(req, socket, head));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  const url = `http://${host}:${port}`;
  log.info({ url, store: store.kind }, 'svc gateway listening');

  return {
    url,
    registry,
    store,
    adminUsername: config.adminUsername,
    adminPassword,
    generatedPassword,
    async close() {
      for (const ws of watchSockets.clients) ws.terminate();
      watchSockets.close();
      await graphql.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await store.close();
    },
  };
}
