import type { ApiObject } from '../store/object.js';
import { matchName, prepareForStatusUpdate, requiredVersion } from '../registry/strategy.js';
import { authorize, present, readOrThrow, rewrite } from './common.js';
import { patchAgainst } from './patch.js';
import type { ModelEntry, OperationContext, PatchType } from './types.js';

/** GET …/{name}/status: the whole object (as Kubernetes does). */
export async function getStatus(ctx: OperationContext, entry: ModelEntry, name: string): Promise<ApiObject> {
  await authorize(ctx, entry, 'get', name, 'status');
  return present(entry, await readOrThrow(entry, name));
}

/**
 * Replaces `status` only. With `expectedVersion` (REST PUT) the write is conditional (409 on
 * mismatch); without it (GraphQL) it is unconditional and retried on races.
 */
export async function updateStatus(
  ctx: OperationContext,
  entry: ModelEntry,
  name: string,
  status: unknown,
  expectedVersion?: number,
): Promise<ApiObject> {
  await authorize(ctx, entry, 'update', name, 'status');
  return rewrite(ctx, entry, name, 'update', 'status', (old) => prepareForStatusUpdate(old, status), expectedVersion);
}

/**
 * PUT …/{name}/status with a whole object as body: its metadata.name must match the path (400),
 * its metadata.version is required (422) and must be the stored one (409); only `status` is kept.
 */
export async function replaceStatus(ctx: OperationContext, entry: ModelEntry, name: string, body: unknown): Promise<ApiObject> {
  await authorize(ctx, entry, 'update', name, 'status');
  const input = matchName(body, name);
  return rewrite(ctx, entry, name, 'update', 'status', (old) => prepareForStatusUpdate(old, input.status), requiredVersion(input));
}

/** PATCH …/{name}/status: the patch is applied to the object; only the resulting status is kept. */
export async function patchStatus(
  ctx: OperationContext,
  entry: ModelEntry,
  name: string,
  patch: unknown,
  type: PatchType,
): Promise<ApiObject> {
  await authorize(ctx, entry, 'patch', name, 'status');
  return rewrite(ctx, entry, name, 'patch', 'status', (old) => prepareForStatusUpdate(old, patchAgainst(entry, old, patch, type).status));
}
