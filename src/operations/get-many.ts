/**
 * GET of many objects of one model by name in one store query (GraphQL `nodes` and references,
 * docs/API.md §13): each name is authorized on its own under the `get` rule (resource names
 * honoured), the allowed ones are read together with one `metadata.name in (…)` list, and each
 * name gets its object, null (no such object) or the denial (an ApiError, nothing read for it).
 */
import type { ApiError } from '../errors/index.js';
import { denial } from '../identity/authorizer.js';
import type { ApiObject } from '../store/object.js';
import { attributesFor, present, storeFailure } from './common.js';
import { readWithin } from './budget.js';
import type { ModelEntry, OperationContext } from './types.js';

export type GetOutcome = ApiObject | null | ApiError;

export async function getObjects(ctx: OperationContext, entry: ModelEntry, names: readonly string[]): Promise<GetOutcome[]> {
  const unique = [...new Set(names)];
  const denied = new Map<string, ApiError>();
  // A rule without resourceNames (the usual grant) allows `get` with no name, and then every
  // name: one decision for the batch. Only otherwise is each name decided on its own.
  const everyName = (await ctx.authorizer.authorize(attributesFor(ctx, entry, 'get', ''))).allowed;
  if (!everyName) {
    await Promise.all(
      unique.map(async (name) => {
        const attrs = attributesFor(ctx, entry, 'get', name);
        if (!(await ctx.authorizer.authorize(attrs)).allowed) denied.set(name, denial(attrs));
      }),
    );
  }
  const allowed = unique.filter((n) => !denied.has(n));
  const found = new Map<string, ApiObject>();
  if (allowed.length) {
    try {
      const items = await readWithin(ctx, entry.limits, async () => (await entry.store.list({
        where: [{ index: 'metadata.name', op: 'in', values: allowed }],
        sort: [{ index: 'metadata.name', direction: 'asc' }],
        // No limit: at most one object per name matches, and without a window the adapters
        // count nothing apart (MongoDB: one find, no countDocuments).
        offset: 0,
      })).items, (read) => {
        // Counted as answered: a name asked n times (aliases of one `nodes`, references to one
        // object) is read once but answered n times.
        const times = new Map<string, number>();
        for (const n of names) times.set(n, (times.get(n) ?? 0) + 1);
        return read.flatMap((o) => Array<ApiObject>(times.get(o.metadata.name) ?? 1).fill(o));
      });
      for (const obj of items) found.set(obj.metadata.name, present(entry, obj));
    } catch (e) {
      storeFailure(entry, '', e);
    }
  }
  return names.map((n) => denied.get(n) ?? found.get(n) ?? null);
}
