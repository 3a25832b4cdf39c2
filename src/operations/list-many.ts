/**
 * First pages of many connections that differ only by one name (GraphQL reverse relations,
 * docs/API.md §13): for each name, the page `listConnection` answers when the requirement
 * "index `index` holds the name" is added to the same arguments, read with a few store queries
 * for all the names together, never one per name.
 *
 * How: one keyset read, in the connection's order, of the objects whose index holds any pending
 * name (ANDed with the rest of the query), at most m × (n + 1) of them for m names and pages of
 * n. The objects of one name in a prefix of that order are its own first objects, so a name that
 * holds n + 1 of them has its page and knows more follow; when the read ends before its limit,
 * every name has all of its objects. Otherwise the next read continues after the last object read
 * (keyset: nothing is read twice), for the names still short. Each full read completes at least
 * one name (its m × (n + 1) objects each belong to a pending name, which would otherwise hold
 * at most n each), and usually the first read completes them all. An object whose property names
 * several of them (an array) counts for each.
 *
 * Only first pages: `first`, or `last` from the end. A cursor is bound to one name's query and
 * is answered by `listConnection`. Everything else is listConnection's: the same checks (Relay
 * arguments, the `list` rule, the plan and its limits, for each name), the response budget, and
 * the same edges, cursors (bound to each name's own query) and pageInfo. `totalCount` is the
 * number read when a name's objects were all read, else a count of that name's matches.
 */
import { ApiError } from '../errors/index.js';
import { MAX_LIMIT } from '../query/cursor.js';
import type { ConnectionArgs, ConnectionResult } from './list-page.js';
import { checkConnectionArgs, connectionResult, count, planRequirements, reversed, scopeOf } from './list-page.js';
import type { ApiObject } from '../store/object.js';
import type { KeysetPage, SortKey, StoreQuery } from '../store/types.js';
import { keysetTerms } from '../store/keyset.js';
import { authorize, present, storeFailure } from './common.js';
import { readWithin } from './budget.js';
import type { ModelEntry, OperationContext } from './types.js';

export type ConnectionOutcome = ConnectionResult | ApiError;

const given = (v: unknown) => v !== undefined && v !== null;

/**
 * How many names one read may serve: m × (n + 1) objects stay within the largest page one
 * connection may read (MAX_LIMIT + 1). A batch of more names is split.
 */
export function namesPerRead(args: Pick<ConnectionArgs, 'first' | 'last'>): number {
  const n = [args.last, args.first, 20].find((v): v is number => typeof v === 'number' && v >= 1 && v <= MAX_LIMIT)!;
  return Math.max(1, Math.floor((MAX_LIMIT + 1) / (n + 1)));
}

/**
 * For each of `names`, its first page of `entry`'s objects whose index `index` holds it, under
 * `args` (no cursor); or its own refusal (an ApiError of its plan). Refusals common to every
 * name (the arguments, the `list` rule) and store failures reject the whole call.
 */
export async function listConnections(
  ctx: OperationContext,
  entry: ModelEntry,
  args: ConnectionArgs,
  index: string,
  names: readonly string[],
): Promise<ConnectionOutcome[]> {
  if (given(args.after) || given(args.before)) throw new Error('listConnections reads first pages: a cursor is answered by listConnection');
  const { n, backward } = checkConnectionArgs(args);
  await authorize(ctx, entry, 'list');
  const plans = new Map<string, StoreQuery | ApiError>();
  for (const name of names) {
    if (plans.has(name)) continue;
    try {
      plans.set(name, planRequirements(entry, args.labels, [...args.fields, { key: index, op: 'in', values: [name] }], args.sort));
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
      plans.set(name, e);
    }
  }
  const planned = [...plans].filter((p): p is [string, StoreQuery] => !(p[1] instanceof ApiError));
  if (planned.length === 0) return names.map((name) => plans.get(name) as ApiError);
  // A name asked n times (aliases with the same arguments) is read once and answered n times.
  const times = new Map<string, number>();
  for (const name of names) times.set(name, (times.get(name) ?? 0) + 1);
  const { read, resourceVersion } = await readFirstObjects(ctx, entry, planned[0]![1], planned.map(([name]) => name), n, backward, times);
  const answers = new Map<string, ConnectionOutcome>();
  await Promise.all(
    planned.map(async ([name, q]) => {
      const { items, keys } = read.get(name)!;
      const more = items.length > n;
      // Every object of a name was read unless its page is full: then it costs a count.
      const totalCount = !args.total ? undefined : more ? await count(entry, q) : items.length;
      const page = { items: items.slice(0, n), keys: keys.slice(0, n), more, resourceVersion };
      if (backward) {
        page.items.reverse();
        page.keys.reverse();
      }
      answers.set(name, connectionResult(scopeOf(entry, q), page, backward, () => false, totalCount));
    }),
  );
  return names.map((name) => answers.get(name) ?? (plans.get(name) as ApiError));
}

/**
 * The first n + 1 objects (fewer: all of them) of each name, in the reading order, with their
 * keys. `template` is the plan of one of the names: its last requirement is that name's.
 */
async function readFirstObjects(
  ctx: OperationContext,
  entry: ModelEntry,
  template: StoreQuery,
  names: string[],
  n: number,
  backward: boolean,
  times: ReadonlyMap<string, number>,
) {
  const shared = template.where.slice(0, -1);
  const own = template.where.at(-1)!;
  const sort = backward ? reversed(template.sort) : keysetTerms(template.sort);
  const read = new Map(names.map((name) => [name, { items: [] as ApiObject[], keys: [] as SortKey[] }]));
  let resourceVersion: string;
  try {
    resourceVersion = await entry.store.resourceVersion();
  } catch (e) {
    storeFailure(entry, '', e);
  }
  let pending = names;
  let after: SortKey | undefined;
  for (;;) {
    const wanted = new Set(pending);
    const where = [...shared, { ...own, values: pending }];
    const round = await readWithin(
      ctx,
      entry.limits,
      async () => {
        let page: KeysetPage;
        try {
          page = await entry.store.page({ where, sort, limit: pending.length * (n + 1), ...(after && { after }) });
        } catch (e) {
          storeFailure(entry, '', e);
        }
        // The objects answered: each kept object once per name whose page it is on, and per
        // time that name was asked (the response budget counts what is answered).
        const answered: ApiObject[] = [];
        page.items.forEach((obj, i) => {
          let shown: ApiObject | undefined;
          for (const value of entry.store.model.indexValues(obj)[own.index] ?? []) {
            const mine = wanted.has(value) ? read.get(value)! : undefined;
            if (!mine || mine.items.length > n) continue;
            shown ??= present(entry, obj);
            mine.items.push(shown);
            mine.keys.push(page.keys[i]!);
            if (mine.items.length <= n) for (let t = times.get(value) ?? 1; t > 0; t--) answered.push(shown);
          }
        });
        return { more: page.more, last: page.keys.at(-1), answered };
      },
      (r) => r.answered,
    );
    pending = pending.filter((name) => read.get(name)!.items.length <= n);
    if (!round.more || pending.length === 0) break;
    after = round.last;
  }
  return { read, resourceVersion };
}
