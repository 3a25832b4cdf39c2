/** What every GraphQL resolver receives as context (HTTP and WebSocket alike). */
import type { FieldOutcome } from '../ops/observer.js';
import type { Authorizer, Caller } from '../security/authorizer.js';

export interface GraphQLContext {
  caller: Caller;
  authorizer: Authorizer;
  /** Told when a field checked by @auth ends (the audit log: ops/observer.ts). */
  fieldDone?: (f: FieldOutcome) => void;
}
