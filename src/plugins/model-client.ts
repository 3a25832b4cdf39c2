/**
 * The client a plugin's code uses for its models. Built over an OperationContext, every call
 * goes through the operations layer and its RBAC check: a custom route's `ctx.client` acts as
 * the route's caller (a handler never does more than its caller may); `ctx.privileged`, built
 * over `privilegedContext`, acts as the plugin itself and is for code that enforces its own
 * rules (e.g. ownership) or runs outside a request (`start`, `stop`).
 */
import { NotFound } from '../errors/index.js';
import * as ops from '../operations/index.js';
import type { ListResult, OperationContext, PatchType } from '../operations/types.js';
import { systemContext } from '../authorization/system.js';
import type { ApiObject } from '../store/object.js';
import type { ModelEntry, Registry } from '../registry/registry.js';

export interface ListQuery {
  page?: number;
  size?: number;
  sort?: string[];
  labelSelector?: string[];
  fieldSelector?: string[];
}

export interface ModelClient {
  get(plural: string, name: string): Promise<ApiObject>;
  list(plural: string, query?: ListQuery): Promise<ListResult>;
  create(plural: string, object: unknown): Promise<ApiObject>;
  update(plural: string, name: string, object: unknown): Promise<ApiObject>;
  patch(plural: string, name: string, patch: unknown, type?: PatchType): Promise<ApiObject>;
  delete(plural: string, name: string): Promise<ApiObject>;
  updateStatus(plural: string, name: string, status: unknown): Promise<ApiObject>;
}

export function createModelClient(registry: Registry, plugin: string, ctx: OperationContext): ModelClient {
  const entry = (plural: string): ModelEntry => {
    const e = registry.ofPlugin(plugin).find((x) => x.model.plural === plural);
    if (!e) throw new NotFound(`plugin "${plugin}" has no model "${plural}"`);
    return e;
  };
  return {
    get: (plural, name) => ops.getObject(ctx, entry(plural), name),
    list: (plural, q = {}) =>
      ops.listObjects(ctx, entry(plural), {
        page: q.page,
        size: q.size,
        sort: q.sort ?? [],
        labelSelector: q.labelSelector ?? [],
        fieldSelector: q.fieldSelector ?? [],
      }),
    create: (plural, object) => ops.createObject(ctx, entry(plural), object),
    update: (plural, name, object) => ops.updateObject(ctx, entry(plural), name, object),
    patch: (plural, name, patch, type = 'merge') => ops.patchObject(ctx, entry(plural), name, patch, type),
    delete: (plural, name) => ops.deleteObject(ctx, entry(plural), name),
    updateStatus: (plural, name, status) => ops.updateStatus(ctx, entry(plural), name, status),
  };
}

/** The plugin's own code acting unrestricted: a named system context (authorization/system.ts). */
export const privilegedContext = (plugin: string): OperationContext => systemContext(`plugin:${plugin}`);
