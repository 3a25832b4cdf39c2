/**
 * Watch: a stream of ADDED / MODIFIED / DELETED events for the objects matching the selectors.
 * Without a resourceVersion the stream opens with ADDED for every current match; with one it
 * resumes after that position (an unknown or expired position → 410 Gone).
 * An object that stops matching arrives as DELETED, one that starts matching as ADDED.
 */
import { matchesWhere } from '../query/plan.js';
import type { ApiObject } from '../registry/object.js';
import type { ChangeEvent } from '../store/types.js';
import { authorize, storeFailure } from './common.js';
import { planList, runList } from './list.js';
import type { ModelEntry, OperationContext, WatchEvent, WatchOptions } from './types.js';

export async function watchObjects(
  ctx: OperationContext,
  entry: ModelEntry,
  opts: WatchOptions,
  onEvent: (e: WatchEvent) => void,
): Promise<() => void> {
  await authorize(ctx, entry, 'watch');
  // Validates selectors against the indexes exactly as list does (400 on bad input).
  const query = planList(entry, { labelSelector: opts.labelSelector, fieldSelector: opts.fieldSelector });
  const { model } = entry;
  // Same requirements, same semantics as the store's list (query/match.ts).
  const matches = (obj: ApiObject) => matchesWhere(query.where, (index) => model.index(index)?.values(obj) ?? []);

  /** Names currently visible through the selectors, to turn transitions into ADDED/DELETED. */
  const visible = new Set<string>();
  const resumed = opts.resourceVersion !== undefined && opts.resourceVersion !== '';

  const translate = (e: ChangeEvent): WatchEvent | undefined => {
    const name = e.object.metadata.name;
    const now = e.type !== 'DELETED' && matches(e.object);
    const before = visible.has(name);
    if (e.type === 'DELETED') {
      if (!before && !(resumed && matches(e.object))) return undefined;
      visible.delete(name);
      return { type: 'DELETED', object: e.object, resourceVersion: e.resourceVersion };
    }
    if (now) {
      visible.add(name);
      const type = before || (resumed && e.type === 'MODIFIED') ? 'MODIFIED' : 'ADDED';
      return { type, object: e.object, resourceVersion: e.resourceVersion };
    }
    if (before) {
      visible.delete(name);
      return { type: 'DELETED', object: e.object, resourceVersion: e.resourceVersion };
    }
    return undefined;
  };

  const deliver = (e: ChangeEvent) => {
    const out = translate(e);
    if (out) onEvent(out);
  };

  try {
    if (resumed) return entry.store.watch(opts.resourceVersion, deliver);
    // List, announce every match as ADDED, then follow the feed from the list's position: the
    // feed replays what happened meanwhile, so nothing is lost (at worst repeated as MODIFIED).
    const initial = await runList(entry, { ...query, offset: 0, limit: undefined });
    for (const obj of initial.items) {
      visible.add(obj.metadata.name);
      onEvent({ type: 'ADDED', object: obj, resourceVersion: initial.resourceVersion });
    }
    return entry.store.watch(initial.resourceVersion, deliver);
  } catch (e) {
    storeFailure(entry, '', e);
  }
}
