/**
 * The optional code entry of a plugin: `index.js`, `index.mjs` or `index.ts`, whose default
 * export is `{models?, routes?, graphql?, start?, stop?}` (docs/API.md §7). The module is imported
 * afresh whenever its file changed, so a plugin updated on disk is picked up by stop + start.
 */
import { existsSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ModelDeclaration } from '../registry/model.js';
import { isPlainObject } from '../store/object.js';
import type { PluginRouteHandler } from './custom-routes.js';
import type { GraphQLExtension } from './graphql-extension.js';
import type { PluginContext } from './plugin-context.js';
import { PluginError } from './manifest.js';

export interface RouteDeclaration {
  method: string;
  /** `/apis/<group>/<version>/…`; `{param}` marks a path parameter. */
  path: string;
  handler: PluginRouteHandler;
  /** Optional: how the route appears in the OpenAPI documents (apidocs/openapi.ts). */
  openapi?: RouteOpenAPI;
}

/**
 * A custom route's description in the OpenAPI documents. `requestBody`, `responses` and
 * `parameters` are OpenAPI 3.1 objects, copied as written (a schema may `$ref` a model of the
 * plugin: `#/components/schemas/<GraphQL type name>`). Path parameters are added from `{param}`.
 */
export interface RouteOpenAPI {
  summary?: string;
  description?: string;
  operationId?: string;
  tags?: string[];
  parameters?: Record<string, unknown>[];
  requestBody?: Record<string, unknown>;
  responses?: Record<string, Record<string, unknown>>;
}

export interface PluginCode {
  models?: ModelDeclaration[];
  routes?: RouteDeclaration[];
  graphql?: GraphQLExtension;
  /** Called last on start (after models, indexes, routes and bundle objects); throw to fail. */
  start?: (ctx: PluginContext) => void | Promise<void>;
  /** Called first on stop. */
  stop?: (ctx: PluginContext) => void | Promise<void>;
}

export const CODE_ENTRIES = ['index.js', 'index.mjs', 'index.ts'];

export function codeEntry(dir: string): string | undefined {
  return CODE_ENTRIES.map((f) => join(dir, f)).find((f) => existsSync(f));
}

// Process-wide on purpose: tsx's module hooks are registered with Node once per process.
let typescript: Promise<void> | undefined;

/**
 * Node 20 cannot import TypeScript. Under `node dist/cli.js` tsx's module hooks are registered
 * the first time a plugin's `index.ts` needs them (under tsx or vitest the import just works).
 */
function registerTypeScript(): Promise<void> {
  typescript ??= import('tsx/esm/api').then(({ register }) => {
    register();
  });
  return typescript;
}

export async function loadCode(dir: string): Promise<PluginCode | undefined> {
  const file = codeEntry(dir);
  if (!file) return undefined;
  let mod: { default?: unknown };
  try {
    const url = pathToFileURL(resolve(file));
    url.searchParams.set('t', String(Math.trunc((await stat(file)).mtimeMs)));
    try {
      mod = (await import(url.href)) as { default?: unknown };
    } catch (e) {
      if (!file.endsWith('.ts') || (e as { code?: string }).code !== 'ERR_UNKNOWN_FILE_EXTENSION') throw e;
      await registerTypeScript();
      url.searchParams.set('ts', '1'); // a fresh URL: the failed one may stay cached
      mod = (await import(url.href)) as { default?: unknown };
    }
  } catch (e) {
    throw new PluginError(`${file}: cannot load: ${(e as Error).message}`);
  }
  const code = mod.default ?? {};
  if (!isPlainObject(code)) throw new PluginError(`${file}: the default export must be an object {models, routes, graphql, start, stop}`);
  for (const k of Object.keys(code)) {
    if (!['models', 'routes', 'graphql', 'start', 'stop'].includes(k)) {
      throw new PluginError(`${file}: unknown export field "${k}" (models, routes, graphql, start, stop)`);
    }
  }
  if (code.models !== undefined && (!Array.isArray(code.models) || !code.models.every(isPlainObject))) {
    throw new PluginError(`${file}: models must be a list of model declarations`);
  }
  if (code.routes !== undefined && !Array.isArray(code.routes)) throw new PluginError(`${file}: routes must be a list`);
  (code.routes as unknown[] | undefined)?.forEach((r, i) => {
    if (!isPlainObject(r) || typeof r.handler !== 'function') {
      throw new PluginError(`${file}: routes[${i}] must be {method, path, handler} with a handler function`);
    }
    const doc = r.openapi;
    if (doc === undefined) return;
    const bad =
      !isPlainObject(doc) ||
      (doc.operationId !== undefined && (typeof doc.operationId !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(doc.operationId))) ||
      (doc.summary !== undefined && typeof doc.summary !== 'string') ||
      (doc.description !== undefined && typeof doc.description !== 'string') ||
      (doc.tags !== undefined && (!Array.isArray(doc.tags) || !doc.tags.every((t) => typeof t === 'string'))) ||
      (doc.parameters !== undefined && (!Array.isArray(doc.parameters) || !doc.parameters.every(isPlainObject))) ||
      (doc.requestBody !== undefined && !isPlainObject(doc.requestBody)) ||
      (doc.responses !== undefined && (!isPlainObject(doc.responses) || !Object.values(doc.responses).every(isPlainObject)));
    if (bad) {
      throw new PluginError(
        `${file}: routes[${i}].openapi must be {summary?, description?, operationId? (an identifier), tags?: string[], parameters?: object[], requestBody?: object, responses?: {status: object}}`,
      );
    }
  });
  for (const fn of ['start', 'stop'] as const) {
    if (code[fn] !== undefined && typeof code[fn] !== 'function') throw new PluginError(`${file}: ${fn} must be a function`);
  }
  if (code.graphql !== undefined && !isPlainObject(code.graphql)) throw new PluginError(`${file}: graphql must be an object`);
  return code as PluginCode;
}
