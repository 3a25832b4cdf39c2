/**
 * Per-verb object rules (like k8s RESTCreateStrategy/RESTUpdateStrategy): which fields the
 * server owns, what a client may change, and validation (metadata rules + JSON Schema).
 * Pure functions: no I/O, no authorization.
 */
import { BadRequest, Invalid, type FieldError } from '../errors/index.js';
import type { GatewayLimits } from '../limits.js';
import type { Model } from './model.js';
import { isPlainObject, type ApiObject, type ObjectMeta } from '../store/object.js';
import {
  checkAnnotations,
  checkFinalizers,
  checkGenerateName,
  checkLabels,
  checkObjectName,
} from './metadata.js';

export const now = (): string => new Date().toISOString();

/** Checks the envelope (object, apiVersion, kind, metadata shape); fills apiVersion/kind when absent. */
function envelope(model: Model, body: unknown): Record<string, unknown> & { metadata: Record<string, unknown> } {
  if (!isPlainObject(body)) throw new BadRequest('the request body must be a JSON object');
  if (body.apiVersion !== undefined && body.apiVersion !== model.apiVersion) {
    throw new BadRequest(`apiVersion "${String(body.apiVersion)}" does not match "${model.apiVersion}"`);
  }
  if (body.kind !== undefined && body.kind !== model.kind) {
    throw new BadRequest(`kind "${String(body.kind)}" does not match "${model.kind}"`);
  }
  if (body.metadata !== undefined && !isPlainObject(body.metadata)) {
    throw new Invalid('metadata must be an object', [{ field: 'metadata', message: 'must be an object' }]);
  }
  return { ...body, metadata: { ...((body.metadata as Record<string, unknown>) ?? {}) } };
}

/** Keeps only the top-level fields the model's schema knows (apiVersion, kind, metadata, spec, status, extras). */
function known(model: Model, body: Record<string, unknown>): ApiObject {
  const props = (model.schema.properties ?? {}) as Record<string, unknown>;
  const out: Record<string, unknown> = { apiVersion: model.apiVersion, kind: model.kind };
  for (const k of Object.keys(props)) if (body[k] !== undefined && !(k in out)) out[k] = body[k];
  return out as unknown as ApiObject;
}

function cleanMeta(meta: Record<string, unknown>): ObjectMeta {
  const out: Record<string, unknown> = {};
  for (const k of ['name', 'generateName', 'labels', 'annotations', 'finalizers']) {
    if (meta[k] !== undefined && meta[k] !== null) out[k] = meta[k];
  }
  if (Array.isArray(out.finalizers)) out.finalizers = [...new Set(out.finalizers as string[])];
  return out as unknown as ObjectMeta;
}

function metadataErrors(meta: Record<string, unknown>, limits: Readonly<GatewayLimits>): FieldError[] {
  return [
    ...checkObjectName(meta.name),
    ...checkLabels(meta.labels, limits),
    ...checkAnnotations(meta.annotations, limits),
    ...checkFinalizers(meta.finalizers, limits),
  ];
}

/** The object as it would be stored must fit limits.objectBytes (checked before the schema). */
function sizeErrors(obj: ApiObject, limits: Readonly<GatewayLimits>): FieldError[] {
  const bytes = Buffer.byteLength(JSON.stringify(obj));
  if (bytes <= limits.objectBytes) return [];
  return [{ field: '(object)', message: `is ${bytes} bytes as JSON; at most ${limits.objectBytes} are allowed (limit: object size)` }];
}

/** Throws Invalid listing every metadata and schema violation of `obj`, under the gateway's `limits`. */
export function validateObject(model: Model, obj: ApiObject, limits: Readonly<GatewayLimits>): void {
  const tooLarge = sizeErrors(obj, limits);
  if (tooLarge.length) throw new Invalid(`${model.kind} is too large: ${tooLarge[0]!.message}`, tooLarge);
  const errors = [...metadataErrors(obj.metadata as unknown as Record<string, unknown>, limits), ...model.validate(obj)];
  if (errors.length) {
    throw new Invalid(`${model.kind} is invalid: ${errors.map((e) => `${e.field}: ${e.message}`).join('; ')}`, errors);
  }
}

/**
 * Create: the client gives name (or generateName), labels, annotations, finalizers, spec and
 * status; the server sets creationTimestamp and version 1 and ignores deletionTimestamp.
 * When only generateName is given, `name` is left empty for the operation to fill.
 */
export function prepareForCreate(model: Model, body: unknown): ApiObject {
  const env = envelope(model, body);
  const obj = known(model, env);
  const meta = cleanMeta(env.metadata);
  if (meta.name === undefined && meta.generateName !== undefined) {
    const errors = checkGenerateName(meta.generateName);
    if (errors.length) throw new Invalid(`metadata.generateName: ${errors[0]!.message}`, errors);
  }
  meta.creationTimestamp = now();
  meta.version = 1;
  obj.metadata = meta;
  return obj;
}

/** Expected version carried by an update body: required (422) and an integer. */
export function requiredVersion(body: unknown): number {
  const meta = isPlainObject(body) && isPlainObject(body.metadata) ? body.metadata : {};
  const v = meta.version;
  if (v === undefined || v === null) {
    throw new Invalid('metadata.version is required on update', [{ field: 'metadata.version', message: 'is required' }]);
  }
  if (typeof v !== 'number' || !Number.isInteger(v)) {
    throw new Invalid('metadata.version must be an integer', [{ field: 'metadata.version', message: 'must be an integer' }]);
  }
  return v;
}

/**
 * Update (PUT, and PATCH after the patch is applied): client-owned fields come from `body`;
 * creationTimestamp, deletionTimestamp and status are kept from `old`; version is old+1.
 * While deleting, no finalizer may be added.
 */
export function prepareForUpdate(model: Model, old: ApiObject, body: unknown): ApiObject {
  const env = envelope(model, body);
  const obj = known(model, env);
  const meta = cleanMeta(env.metadata);
  delete meta.generateName;
  if (old.metadata.generateName) meta.generateName = old.metadata.generateName;
  meta.name = old.metadata.name;
  meta.creationTimestamp = old.metadata.creationTimestamp;
  if (old.metadata.deletionTimestamp) {
    meta.deletionTimestamp = old.metadata.deletionTimestamp;
    const before = new Set(old.metadata.finalizers ?? []);
    const added = (meta.finalizers ?? []).filter((f) => !before.has(f));
    if (added.length) {
      throw new Invalid('no finalizer may be added while the object is being deleted', [
        { field: 'metadata.finalizers', message: `cannot add ${added.join(', ')} while deleting` },
      ]);
    }
  }
  meta.version = (old.metadata.version ?? 0) + 1;
  obj.metadata = meta;
  if (old.status !== undefined) obj.status = old.status;
  else delete obj.status;
  return obj;
}

/** Status update: only `status` changes; everything else is kept from `old`. */
export function prepareForStatusUpdate(old: ApiObject, status: unknown): ApiObject {
  const obj: ApiObject = { ...old, metadata: { ...old.metadata, version: (old.metadata.version ?? 0) + 1 } };
  if (status === undefined || status === null) delete obj.status;
  else obj.status = status;
  return obj;
}

/** Marks an object deleted (DELETE): deletionTimestamp set, version bumped. */
export function prepareForDelete(old: ApiObject): ApiObject {
  return {
    ...old,
    metadata: { ...old.metadata, deletionTimestamp: now(), version: (old.metadata.version ?? 0) + 1 },
  };
}

/** PUT on an object or its status: the body's metadata.name must equal the path's (400); a missing one is filled. */
export function matchName(body: unknown, name: string): Record<string, unknown> & { metadata: Record<string, unknown> } {
  if (!isPlainObject(body)) throw new BadRequest('the request body must be a JSON object');
  const meta = isPlainObject(body.metadata) ? body.metadata : {};
  if (meta.name !== undefined && meta.name !== name) {
    throw new BadRequest(`metadata.name "${String(meta.name)}" does not match the name in the path "${name}"`);
  }
  return { ...body, metadata: { ...meta, name } };
}
