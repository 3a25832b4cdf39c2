import type { ApiObject } from '../store/object.js';
import { matchName, prepareForUpdate, requiredVersion } from '../registry/strategy.js';
import { authorize, rewrite } from './common.js';
import type { ModelEntry, OperationContext } from './types.js';

/**
 * PUT: replaces the client-owned fields. The body must carry the stored metadata.version
 * (missing → 422, different → 409). `status` is not changed here (see status.ts).
 */
export async function updateObject(ctx: OperationContext, entry: ModelEntry, name: string, body: unknown): Promise<ApiObject> {
  await authorize(ctx, entry, 'update', name);
  const input = matchName(body, name);
  return rewrite(ctx, entry, name, 'update', '', (old) => prepareForUpdate(entry.model, old, input), requiredVersion(input));
}
