/** What every GraphQL resolver receives as context (HTTP and WebSocket alike). */
import type { FieldOutcome } from '../observability/observer.js';
import type { Authorizer, Caller } from '../identity/authorizer.js';
import type { WatchHub } from '../watch/hub.js';
import { ResponseBudget } from '../operations/budget.js';

export interface GraphQLContext {
  caller: Caller;
  authorizer: Authorizer;
  /** The gateway's watch state (subscriptions). */
  watches?: WatchHub;
  /** Told when a field checked by @auth ends (the audit log: observability/observer.ts). */
  fieldDone?: (f: FieldOutcome) => void;
  /** The response limit of this operation, shared by all its list and object fields (operations/budget.ts). */
  budget: ResponseBudget;
}

/**
 * A GraphQLContext of the one shape every resolver sees (a plain object with these five fields,
 * in this order). Contexts are built only here. Yoga merges the context into its own request
 * object (req, res, params, …); resolvers get these fields, not a copy of that object.
 */
export function graphQLContext(
  caller: Caller,
  authorizer: Authorizer,
  watches: WatchHub | undefined,
  fieldDone?: (f: FieldOutcome) => void,
  budget: ResponseBudget = new ResponseBudget(),
): GraphQLContext {
  return { caller, authorizer, watches, fieldDone, budget };
}
