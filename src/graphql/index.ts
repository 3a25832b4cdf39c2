/**
 * GraphQL transport (docs/API.md §5). `createGraphQL` is mounted by server.ts on `/graphql`;
 * `checkNames` is the registration-time clash check; `buildGatewaySchema` serves tooling
 * (scripts/print-schema.ts) and tests.
 */
export { createGraphQL, type GraphQLEndpoint, type GraphQLOptions, type RegistryView } from './server.js';
export { buildGatewaySchema, checkNames, SchemaNameClash, type BuildOptions } from './build-schema.js';
export { modelNames, fieldPrefix, typeName, groupTypePrefix } from './naming.js';
export type { GraphQLContext } from './context.js';
