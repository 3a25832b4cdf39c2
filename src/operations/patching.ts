/**
 * Applying patch documents: JSON Merge Patch (RFC 7386) and JSON Patch (RFC 6902, via
 * fast-json-patch). A malformed patch is 400; a well-formed one that cannot be applied is 422.
 */
import jsonpatch from 'fast-json-patch';
import { BadRequest, Invalid } from '../errors/index.js';
import type { PatchType } from './types.js';
import { isPlainObject } from '../store/object.js';

/** RFC 7386: objects merge recursively, null deletes, anything else replaces. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch)) return structuredClone(patch);
  const out: Record<string, unknown> = isPlainObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

export function applyPatch(doc: unknown, patch: unknown, type: PatchType): Record<string, unknown> {
  if (type === 'merge') {
    if (!isPlainObject(patch)) throw new BadRequest('a JSON merge patch must be a JSON object');
    return mergePatch(doc, patch) as Record<string, unknown>;
  }
  if (!Array.isArray(patch)) throw new BadRequest('a JSON patch must be an array of operations');
  const structural = jsonpatch.validate(patch as jsonpatch.Operation[]);
  if (structural) throw new BadRequest(`invalid JSON patch: ${structural.message.split('\n')[0]}`);
  (patch as jsonpatch.Operation[]).forEach((op, i) => {
    // RFC 6902 §4.4: "from" MUST NOT be a proper prefix of "path" (a value cannot move into its
    // own child). fast-json-patch does not check it: moving the whole document ("from": "")
    // into a member of itself made the document circular (500 when it was serialised), and a
    // member into its child failed inside the library.
    if (op.op === 'move' && op.path.startsWith(`${op.from}/`)) {
      throw new BadRequest(`invalid JSON patch: operation ${i} moves "${op.from}" into its own child "${op.path}"`);
    }
  });
  try {
    const result = jsonpatch.applyPatch(structuredClone(doc), patch as jsonpatch.Operation[], true, false).newDocument;
    if (!isPlainObject(result)) throw new BadRequest('the JSON patch must leave an object');
    return result;
  } catch (e) {
    if (e instanceof BadRequest) throw e;
    const message = (e as Error).message?.split('\n')[0] ?? 'cannot be applied';
    throw new Invalid(`the JSON patch cannot be applied: ${message}`, [{ field: '(patch)', message }]);
  }
}

/** The version a patched document asks for, when it differs from the stored one (conditional patch). */
export function requestedVersion(patched: Record<string, unknown>): unknown {
  return isPlainObject(patched.metadata) ? patched.metadata.version : undefined;
}
