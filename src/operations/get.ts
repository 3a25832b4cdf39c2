import type { ApiObject } from '../store/object.js';
import { authorize, present, readOrThrow } from './common.js';
import type { ModelEntry, OperationContext } from './types.js';

/** GET one object. Deleting objects (deletionTimestamp set) stay readable. */
export async function getObject(ctx: OperationContext, entry: ModelEntry, name: string): Promise<ApiObject> {
  await authorize(ctx, entry, 'get', name);
  return present(entry, await readOrThrow(entry, name));
}
