/**
 * The request pipeline, in the order of the Kubernetes filter chain:
 *   authentication → request attributes → authorization → route.
 * Authorization happens before any body is read and before the model is looked up, so a caller
 * without the right gets 401 (anonymous) or 403 (logged in) for a malformed body, a malformed
 * path or an unknown resource alike; only callers allowed on a path learn that it does not exist
 * (docs/API.md §6). Non-resource paths are authorized against nonResourceURLs like any request.
 *
 * Exceptions, explicit: PUBLIC_ENDPOINTS (no authentication, no authorization) and /graphql,
 * which authenticates with the same function and authorizes every field through @auth.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { Authenticate } from '../authentication/authenticate.js';
import { ApiError, BadRequest, Forbidden, MethodNotAllowed, toApiError, Unauthenticated, Unavailable } from '../errors/index.js';
import { rejectUpgrade, sendProblem } from '../errors/http.js';
import { attributesOf, deniedMessage, preauthorized, type Authorizer } from '../identity/authorizer.js';
import type { Registry } from '../registry/registry.js';
import type { PublicEndpoint } from '../observability/health.js';
import type { Observation, RequestObserver } from '../observability/observer.js';
import { tracedDoors } from '../observability/tracing.js';
import { GRAPHQL_PARAMS, NO_PARAMS, rejectUnknownParams } from '../requestinfo/query-params.js';
import { parseRequestInfo, parseTarget, type RequestTarget } from '../requestinfo/requestinfo.js';
import { restWatchSockets } from '../rest/watch-upgrade.js';
import { discoveryRoot } from '../apidocs/routes.js';
import type { RouteContext, RouteTable } from './routes.js';
import { upgradeAuthorization } from '../transport/browser.js';
import type { WatchHub } from '../watch/hub.js';
import { admitsWatch, isWatchQuery } from '../watch/rules.js';

export const GRAPHQL_PATH = '/graphql';

export interface GraphQLDoor {
  handle(req: IncomingMessage, res: ServerResponse): Promise<void>;
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
}

export interface PipelineDeps {
  authenticate: Authenticate;
  authorizer: Authorizer;
  routes: RouteTable;
  registry: Registry;
  graphql: GraphQLDoor;
  /** GraphiQL, served for a GET of /graphql that accepts text/html (apidocs/pages.ts). */
  graphiqlPage?: (req: IncomingMessage, res: ServerResponse) => Promise<void>;
  /** Paths served to everyone, before authentication (e.g. /healthz), with the query parameters each accepts. */
  publicEndpoints: ReadonlyMap<string, PublicEndpoint>;
  /** A public tree of files (the console at /console/: console/serve.ts), served before authentication. */
  publicFiles?: { owns(pathname: string): boolean; serve(req: IncomingMessage, res: ServerResponse, pathname: string): void };
  log: Logger;
  /** The gateway's watch state (REST watches, ndjson and WebSocket). */
  watches: WatchHub;
  /** Told of every request at its start (metrics, audit and request log: observability/observer.ts). */
  observer?: RequestObserver;
}

export interface Pipeline {
  handle(req: IncomingMessage, res: ServerResponse): Promise<void>;
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void>;
  /**
   * Shutdown, first step: REST WebSocket watches close with 1001 "server shutting down", ndjson
   * watches end cleanly, later watch upgrades get 503.
   */
  endWatches(): void;
  close(): void;
}

export function createPipeline(deps: PipelineDeps): Pipeline {
  const { authenticate, authorizer } = deps;
  const logError = (e: unknown) => deps.log.error({ err: e instanceof Error ? e.stack : String(e) }, 'request failed');
  // The REST door's WebSocket watches (rest/watch-upgrade.ts): the pipeline admits, the door opens.
  const watchSockets = restWatchSockets(deps.registry, deps.watches);
  let draining = false;

  /** Authentication → request attributes → authorization. Throws 401/403; returns the route context. */
  async function admitRequest(
    req: IncomingMessage,
    method: string,
    target: RequestTarget,
    watch: boolean,
    seen?: Observation,
    authorization: () => string | undefined = () => req.headers.authorization,
  ): Promise<RouteContext> {
    const info = parseRequestInfo(method, target.pathname, { watch });
    if (seen) seen.info = info;
    const caller = await authenticate(authorization(), { address: req.socket.remoteAddress });
    if (seen) seen.caller = caller;
    const attrs = attributesOf(caller, info);
    let decision = await authorizer.authorize(attrs);
    // A right on /apis (/api) also opens the discovery paths below it (apidocs/routes.ts).
    const root = decision.allowed ? undefined : discoveryRoot(info);
    if (root) decision = await authorizer.authorize({ ...attrs, path: root });
    // A watch may open restricted to the objects a resourceNames grant names (watch/rules.ts).
    if (!admitsWatch(info.verb, decision)) {
      throw caller.authenticated ? new Forbidden(deniedMessage(attrs)) : new Unauthenticated(`authentication required: ${deniedMessage(attrs)}`);
    }
    if (info.malformed) throw new BadRequest(info.malformed);
    return { caller, info, target, operations: { caller, authorizer: preauthorized(attrs, decision, authorizer), watches: deps.watches } };
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const target = parseTarget(req.url);
    const seen = deps.observer?.request(req, res, target);
    try {
      const open = deps.publicEndpoints.get(target.pathname);
      if (open) {
        rejectUnknownParams(target.searchParams, open.params ?? NO_PARAMS);
        // Every public endpoint is read-only (docs/API.md §4: 405 for a method a path does not take).
        const method = req.method ?? 'GET';
        if (method !== 'GET' && method !== 'HEAD') throw new MethodNotAllowed(`${method} is not allowed on ${target.pathname}`, ['GET', 'HEAD']);
        return await open(req, res);
      }
      if (deps.publicFiles?.owns(target.pathname)) {
        rejectUnknownParams(target.searchParams, NO_PARAMS);
        return deps.publicFiles.serve(req, res, target.pathname);
      }
      if (target.pathname === GRAPHQL_PATH) {
        rejectUnknownParams(target.searchParams, GRAPHQL_PARAMS);
        const wantsPage = (req.method === 'GET' || req.method === 'HEAD') && /\btext\/html\b/.test(String(req.headers.accept ?? ''));
        if (wantsPage && deps.graphiqlPage) return await deps.graphiqlPage(req, res);
        return await deps.graphql.handle(req, res);
      }
      const method = req.method ?? 'GET';
      const watch = method === 'GET' && isWatchQuery(target.searchParams);
      const rc = await admitRequest(req, method, target, watch, seen);
      await deps.routes.resolve(method, rc.info, target)(req, res, rc);
    } catch (e) {
      sendProblem(res, e, target.pathname, logError);
    }
  }

  async function upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const target = parseTarget(req.url);
    const seen = deps.observer?.upgrade(req, target);
    if (target.pathname === GRAPHQL_PATH) {
      // graphql-ws takes no query parameters of its own; an unknown one is refused as on HTTP (docs/API.md §4).
      try {
        rejectUnknownParams(target.searchParams, GRAPHQL_PARAMS);
      } catch (e) {
        seen?.end(toApiError(e).status);
        return rejectUpgrade(socket, e, target.pathname);
      }
      seen?.end(101);
      return deps.graphql.handleUpgrade(req, socket, head);
    }
    try {
      if (draining) throw new Unavailable('the server is shutting down');
      // A browser's watch may carry its token as a sub-protocol (transport/browser.ts).
      const rc = await admitRequest(req, 'GET', target, true, seen, () => upgradeAuthorization(req));
      await watchSockets.accept(rc.operations, rc.info, target, req, socket, head);
      seen?.end(101);
    } catch (e) {
      const err = toApiError(e);
      seen?.end(err.status);
      // (An expired resume point is not refused here: the accepted stream ends with ERROR 410.)
      if (!(e instanceof ApiError) || err.status >= 500) logError(e);
      rejectUpgrade(socket, err, target.pathname);
    }
  }

  return tracedDoors({
    handle,
    upgrade,
    endWatches() {
      draining = true;
      deps.watches.streams.endAll();
      watchSockets.goingAway();
    },
    close() {
      watchSockets.close();
    },
  });
}
