import type { ApiObject } from '../store/object.js';
import { prepareForDelete } from '../registry/strategy.js';
import { admit, authorize, commit, present, readOrThrow, retryOnConflict } from './common.js';
import type { ModelEntry, OperationContext } from './types.js';

/**
 * Marks one object deleted and returns it as it stands (deletionTimestamp set). With no
 * finalizers it is removed at once; otherwise it stays readable until the last finalizer is
 * removed by an update or patch. Deleting an object already being deleted changes nothing.
 */
export async function deleteObject(ctx: OperationContext, entry: ModelEntry, name: string): Promise<ApiObject> {
  await authorize(ctx, entry, 'delete', name);
  return present(entry, await markDeleted(ctx, entry, name));
}

/** The delete itself, after authorization (shared with deletecollection); admission runs here. */
export function markDeleted(ctx: OperationContext, entry: ModelEntry, name: string): Promise<ApiObject> {
  return retryOnConflict(async () => {
    const old = await readOrThrow(entry, name);
    if (old.metadata.deletionTimestamp) return old;
    await admit(ctx, entry, 'delete', '', undefined, old);
    return commit(entry, old, prepareForDelete(old));
  });
}
