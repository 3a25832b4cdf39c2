/**
 * Custom GraphQL fields of a plugin: SDL extending Query / Mutation, and their resolvers.
 * Every field must declare `@auth(verb, resource, group, version)` like the generated ones;
 * the gateway checks it before the resolver runs.
 */
export interface GraphQLExtension {
  /** e.g. `extend type Query { peopleCount: Int! @auth(verb: "list", resource: "persons", group: "people.example.com", version: "v1alpha1") }` */
  typeDefs: string;
  /** `{ Query: { peopleCount: (root, args, ctx) => … } }`; ctx has `caller` and `client` (acting as the caller). */
  resolvers: Record<string, Record<string, (...args: any[]) => unknown>>;
}
