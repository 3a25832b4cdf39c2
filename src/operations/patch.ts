import { BadRequest, Invalid } from '../errors/index.js';
import type { ApiObject } from '../store/object.js';
import { prepareForUpdate } from '../registry/strategy.js';
import { authorize, present, rewrite, staleVersion } from './common.js';
import { applyPatch, requestedVersion } from './patching.js';
import type { ModelEntry, OperationContext, PatchType } from './types.js';

/**
 * Applies a patch to the stored object and writes the result. Unconditional unless the patch
 * sets metadata.version (then it must equal the stored version, else 409); unconditional
 * patches are retried when they lose a race. `status` is not changed here.
 */
export async function patchObject(
  ctx: OperationContext,
  entry: ModelEntry,
  name: string,
  patch: unknown,
  type: PatchType,
): Promise<ApiObject> {
  await authorize(ctx, entry, 'patch', name);
  return rewrite(ctx, entry, name, 'patch', '', (old) => prepareForUpdate(entry.model, old, patchAgainst(entry, old, patch, type)));
}

/** Applies the patch and checks name and (optional) version; shared with status patches. */
export function patchAgainst(entry: ModelEntry, old: ApiObject, patch: unknown, type: PatchType): Record<string, unknown> {
  // The patch sees the object as clients do: a write-only field can be set, never read or copied.
  const patched = applyPatch(present(entry, old), patch, type);
  const meta = patched.metadata as Record<string, unknown> | undefined;
  if (meta && meta.name !== undefined && meta.name !== old.metadata.name) {
    throw new BadRequest(`a patch cannot change metadata.name ("${old.metadata.name}")`);
  }
  const v = requestedVersion(patched);
  if (v !== undefined && v !== null && v !== old.metadata.version) {
    if (typeof v !== 'number' || !Number.isInteger(v)) {
      throw new Invalid('metadata.version must be an integer', [{ field: 'metadata.version', message: 'must be an integer' }]);
    }
    // Conditional patch: a retry re-reads and fails the same way, so the caller gets 409.
    throw staleVersion(entry, old.metadata.name, v, old.metadata.version);
  }
  return patched;
}
