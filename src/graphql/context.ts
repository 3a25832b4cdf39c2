/** What every GraphQL resolver receives as context (HTTP and WebSocket alike). */
import type { FieldOutcome } from '../ops/observer.js';
import type { Authorizer, Caller } from '../security/authorizer.js';
import type { WatchHub } from '../watch/hub.js';

export interface GraphQLContext {
  caller: Caller;
  authorizer: Authorizer;
  /** The gateway's watch state (subscriptions). */
  watches?: WatchHub;
  /** Told when a field checked by @auth ends (the audit log: ops/observer.ts). */
  fieldDone?: (f: FieldOutcome) => void;
}

/**
 * A GraphQLContext of the one shape every resolver sees (a plain object with these four fields,
 * in this order). Contexts are built only here: yoga merges the context into its own request
 * object (req, res, params, …), and copying that object with a spread for every @auth field cost
 * about 10 µs of a GraphQL get (bench/RESULTS.md, "GraphQL context of one shape").
 */
export function graphQLContext(
  caller: Caller,
  authorizer: Authorizer,
  watches: WatchHub | undefined,
  fieldDone?: (f: FieldOutcome) => void,
): GraphQLContext {
  return { caller, authorizer, watches, fieldDone };
}
