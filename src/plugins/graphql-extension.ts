/**
 * Custom GraphQL fields of a plugin: SDL extending Query / Mutation, and their resolvers.
 * Every field must declare `@auth(verb, resource, group, version)` like the generated ones;
 * the gateway checks it before the resolver runs.
 */
export interface GraphQLExtension {
  /** e.g. `extend type Query { peopleCount: Int! @auth(verb: "list", resource: "persons", group: "people.example.com", version: "v1alpha1") }` */
  typeDefs: string;
  /**
   * `{ Query: { peopleCount: (root, args, ctx) => … } }`; ctx has `caller`, `plugin`, `client`
   * (acting as the caller: RBAC applies) and `privileged` (acting as the plugin). A Subscription
   * entry is the field's `subscribe` (an async iterable of results).
   */
  resolvers: Record<string, Record<string, (...args: any[]) => unknown>>;
}
