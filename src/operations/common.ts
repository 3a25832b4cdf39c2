/** Helpers every operation uses: authorization, store-error translation, reads. */
import { BadRequest, Conflict, Forbidden, Gone, NotFound, Unavailable, VersionConflict } from '../errors/index.js';
import type { ApiObject } from '../registry/object.js';
import { StoreError } from '../store/errors.js';
import type { ModelEntry, OperationContext } from './types.js';

/** Asks the authorizer; throws Forbidden when it says no. */
export async function authorize(
  ctx: OperationContext,
  entry: ModelEntry,
  verb: string,
  name = '',
  subresource = '',
): Promise<void> {
  const { model } = entry;
  const decision = await ctx.authorizer.authorize({
    caller: ctx.caller,
    verb,
    isResourceRequest: true,
    apiGroup: model.group,
    apiVersion: model.version,
    resource: model.plural,
    subresource,
    name,
    path: '',
  });
  if (!decision.allowed) {
    const what = `${subresource ? `${model.plural}/${subresource}` : model.plural}${name ? ` "${name}"` : ''}`;
    throw new Forbidden(`user "${ctx.caller.username}" cannot ${verb} ${what} in ${model.apiVersion}`);
  }
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
        throw new Conflict(`${kind} "${name}": the value of unique index "${err.index ?? '?'}" is already taken`);
      case 'Expired':
        throw new Gone(err.message);
      case 'Unavailable':
        throw new Unavailable();
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

/** Name from the path must match the body's metadata.name (400); a missing body name is filled. */
export function matchName(body: unknown, name: string): unknown {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new BadRequest('the request body must be a JSON object');
  }
  const b = body as Record<string, unknown>;
  const meta = (typeof b.metadata === 'object' && b.metadata !== null ? b.metadata : {}) as Record<string, unknown>;
  if (meta.name !== undefined && meta.name !== name) {
    throw new BadRequest(`metadata.name "${String(meta.name)}" does not match the name in the path "${name}"`);
  }
  return { ...b, metadata: { ...meta, name } };
}

/**
 * Writes a prepared successor of `old`: removes it when it is deleting with no finalizers left,
 * else compare-and-sets it against `old`'s version.
 */
export async function commit(entry: ModelEntry, old: ApiObject, next: ApiObject): Promise<ApiObject> {
  const name = old.metadata.name;
  const expected = old.metadata.version ?? 0;
  try {
    if (next.metadata.deletionTimestamp && (next.metadata.finalizers ?? []).length === 0) {
      await entry.store.remove(name, expected);
      return next;
    }
    return await entry.store.update(next, expected);
  } catch (e) {
    storeFailure(entry, name, e);
  }
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
