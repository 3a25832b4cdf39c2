/** What every GraphQL resolver receives as context (HTTP and WebSocket alike). */
import type { Authorizer, Caller } from '../rbac/authorizer.js';

export interface GraphQLContext {
  caller: Caller;
  authorizer: Authorizer;
}
