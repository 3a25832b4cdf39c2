import { Invalid } from '../errors/index.js';
import { generateName } from '../registry/metadata.js';
import type { ApiObject } from '../store/object.js';
import { prepareForCreate, validateObject } from '../registry/strategy.js';
import { isStoreError } from '../store/errors.js';
import { admit, authorize, changed, prepare, present, storeFailure } from './common.js';
import type { ModelEntry, OperationContext } from './types.js';

const GENERATE_ATTEMPTS = 5;

/** POST a new object. Name taken, unique index taken or name of a deleting object → 409. */
export async function createObject(ctx: OperationContext, entry: ModelEntry, body: unknown): Promise<ApiObject> {
  await authorize(ctx, entry, 'create');
  const obj = prepareForCreate(entry.model, body);
  const prefix = obj.metadata.name === undefined ? obj.metadata.generateName : undefined;
  const store = async (): Promise<ApiObject> => {
    const created = await entry.store.create(await prepare(entry, obj, undefined));
    await changed(entry, created);
    return present(entry, created);
  };
  if (prefix === undefined) {
    validateObject(entry.model, obj, entry.limits);
    await admit(ctx, entry, 'create', '', obj, undefined);
    try {
      return await store();
    } catch (e) {
      storeFailure(entry, obj.metadata.name, e);
    }
  }
  for (let attempt = 1; ; attempt++) {
    obj.metadata.name = generateName(prefix);
    validateObject(entry.model, obj, entry.limits);
    if (attempt === 1) await admit(ctx, entry, 'create', '', obj, undefined);
    try {
      return await store();
    } catch (e) {
      if (isStoreError(e, 'AlreadyExists') && attempt < GENERATE_ATTEMPTS) continue;
      if (isStoreError(e, 'AlreadyExists')) {
        throw new Invalid('could not generate a free name', [
          { field: 'metadata.generateName', message: 'no free name found; try a longer prefix' },
        ]);
      }
      storeFailure(entry, obj.metadata.name, e);
    }
  }
}
