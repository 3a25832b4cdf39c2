import { BadRequest } from '../errors/index.js';
import { parseListParams } from '../query/plan.js';
import type { ListParams } from '../query/types.js';
import type { StoreQuery } from '../store/types.js';
import { canonicalWhere } from '../store/numeric.js';
import { authorize, present, storeFailure } from './common.js';
import { envelope, type ListResult } from '../query/envelope.js';
import { ResponseBudget } from './budget.js';
import type { ModelEntry, OperationContext } from './types.js';

/**
 * Index names of a model, for the query planner. Cached per model object: a memo of a pure
 * function of an immutable model, so gateways sharing the process share nothing that can differ.
 */
const indexNames = new WeakMap<object, ReadonlySet<string>>();
export function indexesOf(entry: ModelEntry): ReadonlySet<string> {
  let names = indexNames.get(entry.model);
  if (!names) {
    names = new Set(entry.model.indexes.map((i) => i.name));
    indexNames.set(entry.model, names);
  }
  return names;
}

/** Names of a model's numeric indexes (docs/API.md §7). Cached per model object. */
const numericNames = new WeakMap<object, ReadonlySet<string>>();
function numericOf(entry: ModelEntry): ReadonlySet<string> {
  let names = numericNames.get(entry.model);
  if (!names) {
    names = new Set(entry.model.indexes.filter((i) => i.numeric).map((i) => i.name));
    numericNames.set(entry.model, names);
  }
  return names;
}

/**
 * Plans the list parameters onto the model's indexes (400 on bad selectors, sort or paging).
 * Values compared with a numeric index are brought to its canonical number text, so a list and
 * a watch (which matches index values in memory) agree that `spec.year=07` selects 7.
 */
export const planList = (entry: ModelEntry, params: ListParams): StoreQuery => {
  const q = parseListParams(params, indexesOf(entry), entry.limits);
  const numeric = numericOf(entry);
  return numeric.size ? { ...q, where: canonicalWhere(q.where, numeric) } : q;
};

/** Runs a planned query and wraps it in the ListResult envelope. */
export async function runList(entry: ModelEntry, query: StoreQuery): Promise<ListResult> {
  try {
    const resourceVersion = await entry.store.resourceVersion();
    const { items, total } = await entry.store.list(query);
    return envelope(query, items, total, resourceVersion);
  } catch (e) {
    storeFailure(entry, '', e);
  }
}

/**
 * GET a collection: selectors and sort on indexed fields only, 1-based pages. The objects
 * answered count against the response limit (operations/budget.ts), read after the earlier
 * reads of the same budget.
 */
export async function listObjects(ctx: OperationContext, entry: ModelEntry, params: ListParams): Promise<ListResult> {
  await authorize(ctx, entry, 'list');
  const query = planList(entry, params);
  const { limits } = entry;
  const budget = ctx.budget ?? new ResponseBudget(limits.responseBytes, limits.objectBytes);
  return budget.read(async () => {
    const unpaged = query.limit === undefined;
    const read = await runList(entry, unpaged ? { ...query, limit: limits.unpagedItems + 1 } : query);
    if (unpaged && read.items.length > limits.unpagedItems) {
      throw new BadRequest(
        `${read.total} objects match, more than ${limits.unpagedItems} can be listed without size (limit: unpaged list items); ` +
          `request pages with size (at most ${limits.pageSize}) and page`,
      );
    }
    const items = entry.hooks?.present ? read.items.map((o) => present(entry, o)) : read.items;
    budget.spend(items);
    return envelope(query, items, read.total, read.resourceVersion);
  });
}
