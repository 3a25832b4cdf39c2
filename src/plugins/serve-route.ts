/**
 * Serves one matched custom route: the caller (already authenticated) must be allowed by the
 * authorizer on the request's attributes (a resource request when the path has the resource
 * shape, otherwise a non-resource request on the path); then the handler runs with
 * `ctx.client` acting as the caller. Nothing but the super administrator passes by default:
 * role templates grant the rest (docs/API.md §6, §7). A POST without a JSON (or other
 * non-form) Content-Type is 415 before the handler runs (docs/API.md §2).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { ApiError, Internal } from '../errors/index.js';
import { attributesOf, denial, type Authorizer, type Caller } from '../identity/authorizer.js';
import type { Registry } from '../registry/registry.js';
import type { RequestInfo } from '../requestinfo/requestinfo.js';
import { refuseSimplePost } from '../transport/media-type.js';
import { sendFetchResponse, toFetchRequest, type RouteMatch } from './custom-routes.js';
import { createModelClient, privilegedContext } from './model-client.js';

export interface ServeRouteOptions {
  route: RouteMatch;
  info: RequestInfo;
  caller: Caller;
  authorizer: Authorizer;
  registry: Registry;
  log: Logger;
}

export async function serveCustomRoute(req: IncomingMessage, res: ServerResponse, o: ServeRouteOptions): Promise<void> {
  const { info, caller, authorizer, registry } = o;
  const plugin = o.route.route.plugin;
  const attrs = attributesOf(caller, info);
  const decision = await authorizer.authorize(attrs);
  if (!decision.allowed) {
    throw denial(attrs);
  }
  // A POST a page of another origin could send without a preflight never reaches a plugin (transport/media-type.ts).
  refuseSimplePost(req);
  const log = o.log.child({ plugin });
  const request = toFetchRequest(req, `http://${req.headers.host ?? 'localhost'}`);
  let response: Response;
  try {
    response = await o.route.route.handler(request, {
      plugin,
      log,
      params: o.route.params,
      user: caller,
      client: createModelClient(registry, plugin, { caller, authorizer }),
      privileged: createModelClient(registry, plugin, privilegedContext(plugin)),
    });
    if (!(response instanceof Response)) throw new Error('the handler did not return a Response');
  } catch (e) {
    // ApiErrors thrown by the client (403 from RBAC, 404, 409, 422…) keep their status.
    if (e instanceof ApiError) throw e;
    // Anything else is the plugin's bug: its stack goes to the log (pino's err serializer), the
    // client gets a bare 500 problem+json (no message, no stack).
    const route = `${o.route.route.method} /${o.route.route.segments.join('/')}`;
    log.error({ err: e instanceof Error ? e : new Error(`non-Error thrown: ${String(e)}`), route }, 'custom route handler failed');
    throw new Internal();
  }
  try {
    await sendFetchResponse(res, response, req.method === 'HEAD');
  } catch (e) {
    // The headers are out; all we can do is cut the connection.
    log.warn({ err: (e as Error).message }, 'custom route response stream failed');
    res.destroy();
  }
}

