/**
 * The types a plugin author writes against, exported by the package as `svc-gateway/plugin`
 * (package.json `exports`; docs/API.md §7): the manifest, a model declaration (with its
 * indexes), the code entry's default export, route handlers and the
 * contexts they receive, and custom GraphQL fields. Types only: nothing here runs.
 *
 *   import type { PluginModule } from 'svc-gateway/plugin';
 *   export default { routes: [...] } satisfies PluginModule;
 */
export type { PluginManifest, ConsoleRoute } from './manifest.js';
export type { PluginCode as PluginModule, RouteDeclaration, RouteOpenAPI } from './code-loader.js';
export type { PluginContext, PluginRouteContext } from './plugin-context.js';
export type { PluginRouteHandler } from './custom-routes.js';
export type { GraphQLExtension } from './graphql-extension.js';
export type { ModelClient } from './model-client.js';
export type { ModelDeclaration, IndexSpec, JSONSchema } from '../registry/model.js';
export type { ApiObject, ObjectMeta } from '../store/object.js';
