/**
 * Shared types of the operations layer. Every transport (REST, GraphQL, watch) calls the
 * functions exported from operations/index.ts with an OperationContext.
 */
import type { Authorizer, Caller } from '../identity/authorizer.js';
import type { WatchHub } from '../watch/hub.js';
import type { ResponseBudget } from './budget.js';

export interface OperationContext {
  caller: Caller;
  authorizer: Authorizer;
  /** The gateway's watch state; only watches need it (the doors that serve watches set it). */
  watches?: WatchHub;
  /**
   * The response limit shared by every read of one response (a GraphQL operation); without
   * one, each list has its own (REST: one list per request).
   */
  budget?: ResponseBudget;
}

export type { ModelEntry } from '../registry/registry.js';

export type { ListResult } from '../query/envelope.js';

export type PatchType = 'merge' | 'json';

export type { PreparedWatch, WatchEvent, WatchOptions, WatchSink } from '../watch/types.js';
