/**
 * REST adapter for /api and /apis resource paths: parse → operation → serialise. No rules
 * live here; every decision is made by the operations layer.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { MethodNotAllowed, NotFound } from '../errors/index.js';
import * as ops from '../operations/index.js';
import { parsePositiveInt } from '../query/plan.js';
import { parseLimit } from '../query/cursor.js';
import type { ListParams } from '../query/types.js';
import type { ModelEntry, OperationContext } from '../operations/types.js';
import type { RequestInfo, RequestTarget } from '../requestinfo/requestinfo.js';
import type { Registry } from '../registry/registry.js';
import { COLLECTION_GET_PARAMS, DELETECOLLECTION_PARAMS, NO_PARAMS, rejectUnknownParams } from '../requestinfo/query-params.js';
import { readJson, readPatch } from './body.js';
import { sendJson } from '../errors/http.js';
import { streamWatch, watchOptions } from './watch.js';

/** List parameters from a query string; repeated parameters are kept. */
export function listParams(query: URLSearchParams): ListParams {
  return {
    page: parsePositiveInt('page', query.get('page')),
    size: parsePositiveInt('size', query.get('size')),
    sort: query.getAll('sort'),
    labelSelector: query.getAll('labelSelector'),
    fieldSelector: query.getAll('fieldSelector'),
    ...(query.has('limit') && { limit: parseLimit('limit', query.get('limit')) }),
    ...(query.has('continue') && { continue: query.get('continue')! }),
  };
}

/** Finds the model a resource request addresses, or 404. */
export function resolveEntry(registry: Registry, info: RequestInfo): ModelEntry {
  const entry = registry.find(info.apiGroup, info.apiVersion, info.resource);
  if (!entry) {
    throw new NotFound(`the server could not find the requested resource ${info.apiGroup ? `${info.apiGroup}/` : ''}${info.apiVersion}/${info.resource}`);
  }
  return entry;
}

const COLLECTION = ['GET', 'POST', 'DELETE'];
const ITEM = ['GET', 'PUT', 'PATCH', 'DELETE'];
const STATUS = ['GET', 'PUT', 'PATCH'];

export async function handleResource(
  req: IncomingMessage,
  res: ServerResponse,
  url: RequestTarget,
  info: RequestInfo,
  registry: Registry,
  ctx: OperationContext,
): Promise<void> {
  const entry = resolveEntry(registry, info);
  const method = req.method ?? 'GET';
  const { name, subresource } = info;
  // Before any other work: an unknown (say, misspelled) parameter must not be dropped silently.
  rejectUnknownParams(
    url.searchParams,
    name ? NO_PARAMS : method === 'GET' ? COLLECTION_GET_PARAMS : method === 'DELETE' ? DELETECOLLECTION_PARAMS : NO_PARAMS,
  );

  if (!name) {
    switch (method) {
      case 'GET': {
        // The pipeline read `watch=true` into the request's verb (watch/rules.ts isWatchQuery).
        if (info.verb === 'watch') {
          const prepared = await ops.prepareWatch(ctx, entry, watchOptions(url));
          return streamWatch(ctx.watches!, req, res, prepared);
        }
        const params = listParams(url.searchParams);
        // `limit` (and `continue`) ask for a keyset page (docs/API.md §12)
        if (params.limit !== undefined || params.continue !== undefined) return sendJson(res, 200, await ops.listKeysetPage(ctx, entry, params));
        return sendJson(res, 200, await ops.listObjects(ctx, entry, params));
      }
      case 'POST': {
        const created = await ops.createObject(ctx, entry, await readJson(req, entry.limits));
        // Set on the response (not only written) so the audit log can name the object (observability/observer.ts).
        res.setHeader('location', `${url.pathname}/${encodeURIComponent(created.metadata.name)}`);
        return sendJson(res, 201, created);
      }
      case 'DELETE':
        return sendJson(res, 200, await ops.deleteCollection(ctx, entry, listParams(url.searchParams)));
      default:
        throw new MethodNotAllowed(`${method} is not allowed on a collection`, COLLECTION);
    }
  }

  if (subresource === '') {
    switch (method) {
      case 'GET':
        return sendJson(res, 200, await ops.getObject(ctx, entry, name));
      case 'PUT':
        return sendJson(res, 200, await ops.updateObject(ctx, entry, name, await readJson(req, entry.limits)));
      case 'PATCH': {
        const { patch, type } = await readPatch(req, entry.limits);
        return sendJson(res, 200, await ops.patchObject(ctx, entry, name, patch, type));
      }
      case 'DELETE':
        return sendJson(res, 200, await ops.deleteObject(ctx, entry, name));
      default:
        throw new MethodNotAllowed(`${method} is not allowed on an object`, ITEM);
    }
  }

  if (subresource !== 'status') throw new NotFound(`${entry.model.plural} has no subresource "${subresource}"`);
  switch (method) {
    case 'GET':
      return sendJson(res, 200, await ops.getStatus(ctx, entry, name));
    case 'PUT':
      return sendJson(res, 200, await ops.replaceStatus(ctx, entry, name, await readJson(req, entry.limits)));
    case 'PATCH': {
      const { patch, type } = await readPatch(req, entry.limits);
      return sendJson(res, 200, await ops.patchStatus(ctx, entry, name, patch, type));
    }
    default:
      throw new MethodNotAllowed(`${method} is not allowed on ${entry.model.plural}/status`, STATUS);
  }
}
