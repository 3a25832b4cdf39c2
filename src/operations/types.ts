/**
 * Shared types of the operations layer. Every transport (REST, GraphQL, watch) calls the
 * functions exported from operations/index.ts with an OperationContext.
 */
import type { Authorizer, Caller } from '../rbac/authorizer.js';
import type { ApiObject } from '../registry/object.js';
import type { WatchHub } from '../watch/hub.js';

export interface OperationContext {
  caller: Caller;
  authorizer: Authorizer;
  /** The gateway's watch state; only watches need it (the doors that serve watches set it). */
  watches?: WatchHub;
}

export type { ModelEntry } from '../registry/registry.js';

/** docs/API.md §4 list envelope. */
export interface ListResult {
  page: number;
  size: number;
  total: number;
  totalPages: number;
  first: boolean;
  last: boolean;
  hasNext: boolean;
  hasPrevious: boolean;
  items: ApiObject[];
  resourceVersion: string;
}

export type PatchType = 'merge' | 'json';

export type { PreparedWatch, WatchEvent, WatchOptions, WatchSink } from '../watch/types.js';
