/**
 * Shared types of the operations layer. Every transport (REST, GraphQL, watch) calls the
 * functions exported from operations/index.ts with an OperationContext.
 */
import type { Authorizer, Caller } from '../security/authorizer.js';
import type { WatchHub } from '../watch/hub.js';

export interface OperationContext {
  caller: Caller;
  authorizer: Authorizer;
  /** The gateway's watch state; only watches need it (the doors that serve watches set it). */
  watches?: WatchHub;
}

export type { ModelEntry } from '../registry/registry.js';

export type { ListResult } from '../query/envelope.js';

export type PatchType = 'merge' | 'json';

export type { PreparedWatch, WatchEvent, WatchOptions, WatchSink } from '../watch/types.js';
