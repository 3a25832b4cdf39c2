import type { ApiObject } from '../store/object.js';
import { authorize, present, readOrThrow } from './common.js';
import type { ModelEntry, OperationContext } from './types.js';

/**
 * GET one object. Deleting objects (deletionTimestamp set) stay readable. Within a GraphQL
 * operation the object counts against its response limit (operations/budget.ts).
 */
export async function getObject(ctx: OperationContext, entry: ModelEntry, name: string): Promise<ApiObject> {
  await authorize(ctx, entry, 'get', name);
  const obj = present(entry, await readOrThrow(entry, name));
  ctx.budget?.spend([obj]);
  return obj;
}
