/**
 * The types a plugin author writes against, published as `svc-gateway/plugin` (package.json
 * `exports`; compiled to dist/plugins/public-types.d.ts by `npm run build`). Type-only on
 * purpose: a plugin's `import type … from 'svc-gateway/plugin'` is erased, so the gateway loads
 * the plugin's code without resolving the package. Everything here is defined next to the code
 * that reads it; this file only re-exports.
 *
 *   import type { PluginCode } from 'svc-gateway/plugin';
 *   export default { routes: [...], start(ctx) {...} } satisfies PluginCode;
 */
export type { PluginManifestDocument, ConsoleRoute } from './manifest.js';
export type { PluginCode, RouteDeclaration, RouteOpenAPI } from './code-loader.js';
export type { PluginRouteHandler } from './custom-routes.js';
export type { GraphQLExtension, PluginGraphQLContext, PluginResolver } from './graphql-extension.js';
export type { PluginContext, PluginRouteContext } from './plugin-context.js';
export type { ListQuery, ModelClient } from './model-client.js';
export type { IndexSpec, JSONSchema, ModelDeclaration } from '../registry/model.js';
export type { ApiObject, ObjectMeta } from '../store/object.js';
export type { Caller } from '../identity/authorizer.js';
export type { ListResult, PatchType } from '../operations/types.js';
