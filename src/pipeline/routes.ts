/**
 * The route table, consulted only after authentication and authorization (pipeline/pipeline.ts):
 *   1. platform routes: personal access tokens and permissions (pipeline/platform-routes.ts);
 *   2. custom routes: the slot plugins fill (`GatewayOptions.customRoutes`);
 *   3. resource paths under /api and /apis: the generated REST API of every registered model;
 *   4. non-resource paths the gateway serves, authorized as nonResourceURLs: `/metrics`, discovery,
 *      OpenAPI documents, /docs (apidocs/routes.ts);
 *   5. anything else: 404.
 * `/healthz` (PUBLIC_ENDPOINTS) and `/graphql` (every field authorized by @auth) are served by
 * the pipeline before this table.
 */
import type { Caller } from '../identity/caller.js';
import { NotFound } from '../errors/index.js';
import type { OperationContext } from '../operations/types.js';
import type { Registry } from '../registry/registry.js';
import type { RequestHandler } from '../requestinfo/handler.js';
import type { RequestInfo, RequestTarget } from '../requestinfo/requestinfo.js';
import { handleResource } from '../rest/handler.js';

/** What a route handler learns about an authorized request. */
export interface RouteContext {
  caller: Caller;
  /** For calls of the operations layer as the caller (this request's decision is already known). */
  operations: OperationContext;
  info: RequestInfo;
  target: RequestTarget;
}

export type RouteHandler = RequestHandler<RouteContext>;

/** The custom-route slot: returns the handler of a path, or undefined when none is mounted. */
export interface CustomRoutes {
  match(method: string, pathname: string): RouteHandler | undefined;
}

export interface RouteTableDeps {
  registry: Registry;
  platform: (info: RequestInfo) => RouteHandler | undefined;
  customRoutes?: CustomRoutes;
  /** Non-resource routes the gateway serves itself behind authorization (/metrics, discovery, OpenAPI, docs). */
  nonResource?: (method: string, info: RequestInfo, target: RequestTarget) => RouteHandler | undefined;
}

export interface RouteTable {
  resolve(method: string, info: RequestInfo, target: RequestTarget): RouteHandler;
}

export function createRouteTable(deps: RouteTableDeps): RouteTable {
  const resource: RouteHandler = (req, res, rc) => handleResource(req, res, rc.target, rc.info, deps.registry, rc.operations);
  const none: RouteHandler = async (req, _res, rc) => {
    throw new NotFound(`no route for ${req.method} ${rc.target.pathname}`);
  };
  return {
    resolve(method, info, target) {
      return (
        (info.isResourceRequest ? deps.platform(info) : deps.nonResource?.(method, info, target)) ??
        deps.customRoutes?.match(method, target.pathname) ??
        (info.isResourceRequest ? resource : none)
      );
    },
  };
}
