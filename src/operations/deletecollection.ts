import { NotFound } from '../errors/index.js';
import type { ListParams } from '../query/types.js';
import type { ApiObject } from '../store/object.js';
import { admit, authorize, present } from './common.js';
import { markDeleted } from './delete.js';
import { envelope } from '../query/envelope.js';
import { planList, runList } from './list.js';
import type { ListResult, ModelEntry, OperationContext } from './types.js';

/**
 * DELETE on a collection: deletes every object matching the selectors (paging parameters
 * select a window as in list) and returns them as they stand, in a ListResult.
 */
export async function deleteCollection(ctx: OperationContext, entry: ModelEntry, params: ListParams): Promise<ListResult> {
  await authorize(ctx, entry, 'deletecollection');
  const query = planList(entry, params);
  const matched = await runList(entry, query);
  // Every object must be admitted before any is deleted: a refusal changes nothing.
  if (entry.hooks?.admit) {
    for (const obj of matched.items) if (!obj.metadata.deletionTimestamp) await admit(ctx, entry, 'delete', '', undefined, obj);
  }
  const deleted: ApiObject[] = [];
  for (const obj of matched.items) {
    try {
      deleted.push(present(entry, await markDeleted(ctx, entry, obj.metadata.name)));
    } catch (e) {
      if (!(e instanceof NotFound)) throw e; // removed concurrently: nothing to report
    }
  }
  return envelope(query, deleted, matched.total, await entry.store.resourceVersion());
}
