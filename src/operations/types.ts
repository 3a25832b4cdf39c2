/**
 * Shared types of the operations layer. Every transport (REST, GraphQL, watch) calls the
 * functions exported from operations/index.ts with an OperationContext.
 */
import type { Authorizer, Caller } from '../security/authorizer.js';
import type { ApiObject } from '../store/object.js';
import type { WatchEventType } from '../store/types.js';

export interface OperationContext {
  caller: Caller;
  authorizer: Authorizer;
}

export type { ModelEntry } from '../registry/registry.js';

export type { ListResult } from '../query/envelope.js';

export type PatchType = 'merge' | 'json';

export interface WatchOptions {
  labelSelector?: string[];
  fieldSelector?: string[];
  /** Resume after this change-feed position; without it, ADDED for every current match first. */
  resourceVersion?: string;
}

export interface WatchEvent {
  type: WatchEventType | 'BOOKMARK' | 'ERROR';
  object: ApiObject | { code: number; message: string };
  resourceVersion: string;
}
