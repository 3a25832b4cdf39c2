/**
 * Routes the platform serves itself (not generated from a model):
 *   - personal access tokens (docs/API.md §2) at /apis/uc.api.security.svc.run/v1alpha1/personalaccesstokens:
 *     POST creates one for the caller (201, the object plus a top-level `token`, shown once),
 *     GET lists or reads the caller's own (never the token text), DELETE …/{name} revokes;
 *   - permissions (docs/API.md §6) at /apis/api.console.svc.run/v1alpha1/users/-/permissions:
 *     `{roles, uiPermissions}` of the caller (`-`) or of a named user;
 *   - console routes at /apis/api.console.svc.run/v1alpha1/routes: the `spec.console.routes` of
 *     the started plugins with their model (group, version, kind, JSON Schema): those whose model
 *     the caller may `list`, and, without the schema, those whose UI permissions the caller holds
 *     (the console builds its menu and forms from them).
 * Like every route they run after authorization; the built-in roles grant them (builtin-roles.ts).
 */
import type { Caller } from '../identity/caller.js';
import { userCaller } from '../identity/caller.js';
import { TOKEN_GROUP, TOKEN_RESOURCE, TOKEN_VERSION, type TokenStore } from '../authentication/tokens.js';
import { MethodNotAllowed, NotFound, Unauthenticated } from '../errors/index.js';
import { sendJson } from '../errors/http.js';
import { CONSOLE_GROUP } from '../authorization/builtin-roles.js';
import { NO_PARAMS, rejectUnknownParams } from '../requestinfo/query-params.js';
import type { RequestInfo } from '../requestinfo/requestinfo.js';
import { readJson } from '../rest/body.js';
import type { RouteHandler } from './routes.js';
import type { GatewayLimits } from '../limits.js';

/** A plugin's console route with the model it shows. */
export interface ConsoleRouteView {
  plugin: string;
  name: string;
  title: string;
  resource: string;
  permissions: string[];
  managePermissions: string[];
  group: string;
  version: string;
  kind: string;
  schema: unknown;
}

export interface PlatformDeps {
  /** Console routes of the started plugins (none when absent). */
  consoleRoutes?: () => ConsoleRouteView[];
  tokens: TokenStore;
  /** The gateway's limits (a token request's body). */
  limits: Readonly<GatewayLimits>;
  describe(caller: Caller): Promise<{ roles: string[]; uiPermissions: string[] }>;
  userExists(name: string): Promise<boolean>;
}

function owner(caller: Caller): string {
  if (!caller.authenticated || caller.via === 'system') throw new Unauthenticated('personal access tokens belong to a logged-in user');
  return caller.username;
}

export function platformRoutes(deps: PlatformDeps): (info: RequestInfo) => RouteHandler | undefined {
  const tokens: RouteHandler = async (req, res, { caller, info, target }) => {
    const method = req.method ?? 'GET';
    if (info.subresource) throw new NotFound(`${TOKEN_RESOURCE} has no subresource "${info.subresource}"`);
    if (!info.name) {
      if (method === 'GET') return sendJson(res, 200, await deps.tokens.list(owner(caller)));
      if (method === 'POST') {
        // The token belongs to the caller's user object; minted with a token, it expires no later.
        const minter = { username: owner(caller), userCreated: caller.session?.userCreated, notAfter: caller.session?.expiresAt };
        const { object, token } = await deps.tokens.create(minter, await readJson(req, deps.limits));
        return sendJson(res, 201, { ...object, token }, { location: `${target.pathname}/${object.metadata.name}`, 'cache-control': 'no-store' });
      }
      throw new MethodNotAllowed(`${method} is not allowed on ${TOKEN_RESOURCE}`, ['GET', 'POST']);
    }
    if (method === 'GET') return sendJson(res, 200, await deps.tokens.get(owner(caller), info.name));
    if (method === 'DELETE') return sendJson(res, 200, await deps.tokens.revoke(owner(caller), info.name));
    throw new MethodNotAllowed(`${method} is not allowed on a personal access token`, ['GET', 'DELETE']);
  };

  const permissions: RouteHandler = async (req, res, { caller, info }) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') throw new MethodNotAllowed(`${req.method} is not allowed on permissions`, ['GET']);
    if (info.name === '-') return sendJson(res, 200, await deps.describe(caller));
    if (!(await deps.userExists(info.name))) throw new NotFound(`User "${info.name}" not found`);
    return sendJson(res, 200, await deps.describe(userCaller(info.name, 'basic')));
  };

  const consoleRoutes: RouteHandler = async (req, res, { caller, info, operations }) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') throw new MethodNotAllowed(`${req.method} is not allowed on console routes`, ['GET']);
    if (info.name || info.subresource) throw new NotFound('console routes are listed as a whole');
    const items: ConsoleRouteView[] = [];
    let ui: Set<string> | undefined;
    for (const r of deps.consoleRoutes?.() ?? []) {
      const attrs = {
        caller,
        verb: 'list',
        isResourceRequest: true,
        apiGroup: r.group,
        apiVersion: r.version,
        resource: r.resource,
        subresource: '',
        name: '',
        path: '',
      };
      if ((await operations.authorizer.authorize(attrs)).allowed) {
        items.push(r);
        continue;
      }
      // A route whose UI permissions the caller holds is listed for the menu, without the
      // model's schema (which only those who may list the model read).
      ui ??= new Set((await deps.describe(caller)).uiPermissions);
      const holds = ui.has('*') || r.permissions.every((p) => ui!.has(p));
      if (r.permissions.length > 0 && holds) items.push({ ...r, schema: null });
    }
    return sendJson(res, 200, { items });
  };

  // No platform route reads a query parameter: any one is refused (docs/API.md §4).
  const strict =
    (route: RouteHandler): RouteHandler =>
    (req, res, rc) => {
      rejectUnknownParams(rc.target.searchParams, NO_PARAMS);
      return route(req, res, rc);
    };
  const tokenRoute = strict(tokens);
  const permissionsRoute = strict(permissions);
  const consoleRoutesRoute = strict(consoleRoutes);

  return (info) => {
    if (info.apiPrefix !== 'apis') return undefined;
    if (info.apiGroup === TOKEN_GROUP && info.apiVersion === TOKEN_VERSION && info.resource === TOKEN_RESOURCE) return tokenRoute;
    if (info.apiGroup === CONSOLE_GROUP && info.apiVersion === 'v1alpha1' && info.resource === 'users' && info.subresource === 'permissions') {
      return permissionsRoute;
    }
    if (info.apiGroup === CONSOLE_GROUP && info.apiVersion === 'v1alpha1' && info.resource === 'routes') return consoleRoutesRoute;
    return undefined;
  };
}
