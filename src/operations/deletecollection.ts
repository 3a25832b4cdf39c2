import { NotFound } from '../errors/index.js';
import type { ListParams } from '../query/types.js';
import type { ApiObject } from '../registry/object.js';
import { authorize } from './common.js';
import { markDeleted } from './delete.js';
import { envelope, planList, runList } from './list.js';
import type { ListResult, ModelEntry, OperationContext } from './types.js';

/**
 * DELETE on a collection: deletes every object matching the selectors (paging parameters
 * select a window as in list) and returns them as they stand, in a ListResult.
 */
export async function deleteCollection(ctx: OperationContext, entry: ModelEntry, params: ListParams): Promise<ListResult> {
  await authorize(ctx, entry, 'deletecollection');
  const query = planList(entry, params);
  const matched = await runList(entry, query);
  const deleted: ApiObject[] = [];
  for (const obj of matched.items) {
    try {
      deleted.push(await markDeleted(entry, obj.metadata.name));
    } catch (e) {
      if (!(e instanceof NotFound)) throw e; // removed concurrently: nothing to report
    }
  }
  return envelope(query, deleted, matched.total, await entry.store.resourceVersion());
}
