/**
 * The operations layer: one function per verb. REST handlers (rest/) and GraphQL resolvers
 * (graphql/) are thin adapters over these. Each function authorizes the caller, applies the
 * registry's metadata rules and schema validation, and talks to the model's store.
 * Errors are ApiError subclasses (errors/index.ts).
 */
export type { OperationContext, ModelEntry, ListResult, PatchType, WatchOptions, WatchEvent } from './types.js';
export { getObject } from './get.js';
export { listObjects } from './list.js';
export { listKeysetPage, listConnection } from './list-page.js';
export type { ConnectionArgs, ConnectionResult, KeysetListResult } from './list-page.js';
export { createObject } from './create.js';
export { updateObject } from './update.js';
export { patchObject } from './patch.js';
export { deleteObject } from './delete.js';
export { deleteCollection } from './deletecollection.js';
export { getStatus, updateStatus, replaceStatus, patchStatus } from './status.js';
export { prepareWatch } from './watch.js';
export type { PreparedWatch, WatchSink } from './types.js';
export { encodeWatchEvent, encodeWatchEventBytes, errorEvent } from '../watch/encode.js';
export { getObjects, type GetOutcome } from './get-many.js';
export { listConnections, namesPerRead, type ConnectionOutcome } from './list-many.js';
