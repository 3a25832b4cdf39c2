/** Helpers every operation uses: authorization, store-error translation, reads and the write sequence (rewrite). */
import { Conflict, Gone, NotFound, Unavailable, VersionConflict } from '../errors/index.js';
import { attributesOf, denial, type Attributes, type Decision } from '../identity/authorizer.js';
import type { WriteVerb } from '../registry/hooks.js';
import type { ApiObject } from '../store/object.js';
import { validateObject } from '../registry/strategy.js';
import { StoreError } from '../store/errors.js';
import type { ModelEntry, OperationContext } from './types.js';

/** The attributes of a request on a model, as the HTTP pipeline and the @auth directive build them. */
export function attributesFor(ctx: OperationContext, entry: ModelEntry, verb: string, name = '', subresource = ''): Attributes {
  const { model } = entry;
  return attributesOf(ctx.caller, { verb, apiGroup: model.group, apiVersion: model.version, resource: model.plural, subresource, name });
}

/**
 * Asks the authorizer; throws Forbidden (Unauthenticated for an anonymous caller) when it says no. Transports that already authorized the
 * request pass an authorizer that answers it from that decision (identity/authorizer.ts
 * `preauthorized`), so each request is decided once; every other caller is checked here.
 */
export async function authorize(
  ctx: OperationContext,
  entry: ModelEntry,
  verb: string,
  name = '',
  subresource = '',
): Promise<Decision> {
  const attrs = attributesFor(ctx, entry, verb, name, subresource);
  const decision = await ctx.authorizer.authorize(attrs);
  if (!decision.allowed) throw denial(attrs);
  return decision;
}

/** What leaves the gateway: the kind's presentation hook (e.g. write-only fields removed). */
export const present = (entry: ModelEntry, obj: ApiObject): ApiObject => (entry.hooks?.present ? entry.hooks.present(obj) : obj);

/** The kind's admission hook (RBAC safety checks): throws to refuse the write. */
export async function admit(
  ctx: OperationContext,
  entry: ModelEntry,
  verb: WriteVerb,
  subresource: string,
  object: ApiObject | undefined,
  old: ApiObject | undefined,
): Promise<void> {
  await entry.hooks?.admit?.({ caller: ctx.caller, authorizer: ctx.authorizer, verb, subresource, object, old });
}

/** The kind's last change before storing (e.g. password hashing), after validation. */
export const prepare = async (entry: ModelEntry, next: ApiObject, old: ApiObject | undefined): Promise<ApiObject> =>
  entry.hooks?.prepare ? entry.hooks.prepare(next, old) : next;

/** Tells the kind a write was committed (cache invalidation). */
export async function changed(entry: ModelEntry, obj: ApiObject): Promise<void> {
  await entry.hooks?.changed?.(obj);
}

/** Translates neutral storage errors into API errors (k8s storage/errors InterpretXError). */
export function storeFailure(entry: ModelEntry, name: string, err: unknown): never {
  if (err instanceof StoreError) {
    const kind = entry.model.kind;
    switch (err.code) {
      case 'NotFound':
        throw new NotFound(`${kind} "${name}" not found`);
      case 'AlreadyExists':
        throw new Conflict(`${kind} "${name}" already exists`);
      case 'Conflict':
        throw new VersionConflict(`${kind} "${name}" was modified concurrently (metadata.version is stale); read it again and retry`);
      case 'UniqueViolation':
        throw new Conflict(
          err.index === undefined
            ? `${kind} "${name}": a value of a unique index is already taken`
            : `${kind} "${name}": the value of unique index "${err.index}" is already taken`,
        );
      case 'Expired':
        throw new Gone(err.message);
      case 'Unavailable':
        throw Unavailable.fromStore(err.timeoutMs);
    }
  }
  throw err;
}

export async function readOrThrow(entry: ModelEntry, name: string): Promise<ApiObject> {
  let obj: ApiObject | null;
  try {
    obj = await entry.store.get(name);
  } catch (e) {
    storeFailure(entry, name, e);
  }
  if (!obj) throw new NotFound(`${entry.model.kind} "${name}" not found`);
  return obj;
}

/**
 * Writes a prepared successor of `old`: removes it when it is deleting with no finalizers left
 * (the DELETED change carrying `next`, deletionTimestamp set), else compare-and-sets it against
 * `old`'s version.
 */
export async function commit(entry: ModelEntry, old: ApiObject, next: ApiObject): Promise<ApiObject> {
  const name = old.metadata.name;
  const expected = old.metadata.version ?? 0;
  try {
    let result: ApiObject;
    if (next.metadata.deletionTimestamp && (next.metadata.finalizers ?? []).length === 0) {
      // The DELETED change carries this final state, prepared as a stored object would be.
      result = await prepare(entry, next, old);
      await entry.store.remove(name, expected, result);
    } else {
      result = await entry.store.update(await prepare(entry, next, old), expected);
    }
    await changed(entry, result);
    return result;
  } catch (e) {
    storeFailure(entry, name, e);
  }
}

/** 409 for a write that names a version other than the stored one. */
export const staleVersion = (entry: ModelEntry, name: string, expected: unknown, stored: number | undefined): VersionConflict =>
  new VersionConflict(`${entry.model.kind} "${name}": metadata.version ${expected} does not match the stored version ${stored}`);

/**
 * The one sequence of every change to a stored object (update, patch, status): read it, check
 * the version the client expects (409), derive the successor (`successor`: the replacement, the
 * patched object, the new status), validate it, admit it, commit it and present the result.
 * Without `expectedVersion` the write is unconditional and retried when it loses a race.
 */
export async function rewrite(
  ctx: OperationContext,
  entry: ModelEntry,
  name: string,
  verb: WriteVerb,
  subresource: string,
  successor: (old: ApiObject) => ApiObject,
  expectedVersion?: number,
): Promise<ApiObject> {
  const attempt = async () => {
    const old = await readOrThrow(entry, name);
    if (expectedVersion !== undefined && old.metadata.version !== expectedVersion) {
      throw staleVersion(entry, name, expectedVersion, old.metadata.version);
    }
    const next = successor(old);
    validateObject(entry.model, next, entry.limits);
    await admit(ctx, entry, verb, subresource, next, old);
    return present(entry, await commit(entry, old, next));
  };
  return expectedVersion === undefined ? retryOnConflict(attempt) : attempt();
}

/** Retries `attempt` when it fails only because of a concurrent write (unconditional updates). */
export async function retryOnConflict<T>(attempt: () => Promise<T>, tries = 5): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await attempt();
    } catch (e) {
      if (!(e instanceof VersionConflict) || i >= tries) throw e;
    }
  }
}
