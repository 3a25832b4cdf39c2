import type { ApiObject } from '../registry/object.js';
import { matchName, prepareForUpdate, requiredVersion, validateObject } from '../registry/strategy.js';
import { VersionConflict } from '../errors/index.js';
import { admit, authorize, commit, present, readOrThrow } from './common.js';
import type { ModelEntry, OperationContext } from './types.js';

/**
 * PUT: replaces the client-owned fields. The body must carry the stored metadata.version
 * (missing → 422, different → 409). `status` is not changed here (see status.ts).
 */
export async function updateObject(ctx: OperationContext, entry: ModelEntry, name: string, body: unknown): Promise<ApiObject> {
  await authorize(ctx, entry, 'update', name);
  const input = matchName(body, name);
  const expected = requiredVersion(input);
  const old = await readOrThrow(entry, name);
  if (old.metadata.version !== expected) {
    throw new VersionConflict(
      `${entry.model.kind} "${name}": metadata.version ${expected} does not match the stored version ${old.metadata.version}`,
    );
  }
  const next = prepareForUpdate(entry.model, old, input);
  validateObject(entry.model, next);
  await admit(ctx, entry, 'update', '', next, old);
  return present(entry, await commit(entry, old, next));
}
