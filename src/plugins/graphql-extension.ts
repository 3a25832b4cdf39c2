/**
 * Custom GraphQL fields of a plugin: SDL extending Query / Mutation, and their resolvers.
 * Every field must declare `@auth(verb, resource, group, version)` like the generated ones;
 * the gateway checks it before the resolver runs.
 */
import type { GraphQLResolveInfo } from 'graphql';
import type { Caller } from '../identity/authorizer.js';
import type { ModelClient } from './model-client.js';

/** What a custom field's resolver gets as its context (server.ts builds it, graphql/build-schema.ts passes it). */
export interface PluginGraphQLContext {
  /** The authenticated caller (`anonymous` for visitors). */
  caller: Caller;
  /** The plugin's name. */
  plugin: string;
  /** Acts as the caller: RBAC applies. */
  client: ModelClient;
  /** Acts as the plugin itself: no RBAC check. */
  privileged: ModelClient;
}

/** A resolver; for a Subscription field, its `subscribe` (returns an async iterable of results). */
export type PluginResolver = (root: any, args: any, ctx: PluginGraphQLContext, info: GraphQLResolveInfo) => unknown;

export interface GraphQLExtension {
  /** e.g. `extend type Query { peopleCount: Int! @auth(verb: "list", resource: "persons", group: "people.example.com", version: "v1alpha1") }` */
  typeDefs: string;
  /** `{ Query: { peopleCount: (root, args, ctx) => … } }`. */
  resolvers: Record<string, Record<string, PluginResolver>>;
}
