/**
 * Keyset lists (docs/API.md §12, §13): REST `limit`/`continue` and GraphQL connections. A page
 * is read by the store from the position a token holds on (ModelStore.page), so its cost does
 * not grow with its depth; the token is bound to the query (query/cursor.ts). No total is
 * counted unless a connection's `totalCount` is asked for.
 */
import { BadRequest } from '../errors/index.js';
import { checkLimit, cursorEncoder, decodeCursor, encodeCursor, type CursorScope } from '../query/cursor.js';
import { checkFieldsIndexed, planListQuery } from '../query/plan.js';
import type { ListParams, Requirement, SortSpec } from '../query/types.js';
import type { ApiObject } from '../store/object.js';
import type { IndexRequirement, SortKey, SortTerm, StoreQuery } from '../store/types.js';
import { isRangeOp } from '../store/types.js';
import { canonicalWhere } from '../store/numeric.js';
import { keysetTerms } from '../store/keyset.js';
import { authorize, present, storeFailure } from './common.js';
import { indexesOf, planList } from './list.js';
import { readWithin } from './budget.js';
import type { ModelEntry, OperationContext } from './types.js';

/** The answer to a REST list with `limit` (docs/API.md §12). */
export interface KeysetListResult {
  items: ApiObject[];
  resourceVersion: string;
  /** The token of the next page; "" on the last page. */
  continue: string;
  /** Left out: it would cost a count of every match. */
  remainingItemCount?: number;
}

/** A planned query's scope, the one its tokens are bound to. */
export const scopeOf = (entry: ModelEntry, q: Pick<StoreQuery, 'where' | 'sort'>): CursorScope => ({
  model: `${entry.model.group}/${entry.model.version}/${entry.model.plural}`,
  where: q.where,
  sort: q.sort,
});

/** GET a collection with `limit` (and `continue`): one keyset page. */
export async function listKeysetPage(ctx: OperationContext, entry: ModelEntry, params: ListParams): Promise<KeysetListResult> {
  if (params.page !== undefined || params.size !== undefined) {
    throw new BadRequest('limit and continue cannot be combined with page or size: use either keyset pages (limit, continue) or numbered pages (page, size)');
  }
  if (params.limit === undefined) throw new BadRequest('continue needs limit (the page size, 1 to 1000)');
  const limit = checkLimit('limit', params.limit);
  await authorize(ctx, entry, 'list');
  const q = planList(entry, { sort: params.sort, labelSelector: params.labelSelector, fieldSelector: params.fieldSelector });
  const scope = scopeOf(entry, q);
  const after = params.continue === undefined || params.continue === '' ? undefined : decodeCursor(scope, params.continue);
  const page = await readWithin(ctx, entry.limits, () => readPage(entry, q, limit, after, false), (p) => p.items);
  return {
    items: page.items,
    resourceVersion: page.resourceVersion,
    continue: page.more ? encodeCursor(scope, page.keys.at(-1)!) : '',
  };
}

/** What a connection asks for (docs/API.md §13), already typed by the GraphQL door. */
export interface ConnectionArgs {
  labels: Requirement[];
  fields: Requirement[];
  sort: SortSpec[];
  first?: number | null;
  after?: string | null;
  last?: number | null;
  before?: string | null;
  /** Count every match (only when `totalCount` is selected). */
  total: boolean;
}

export interface ConnectionResult {
  edges: { cursor: string; node: ApiObject }[];
  /** hasNextPage or hasPreviousPage may be a promise: the read of the other side starts when it is asked. */
  pageInfo: { hasNextPage: boolean | Promise<boolean>; hasPreviousPage: boolean | Promise<boolean>; startCursor: string | null; endCursor: string | null };
  totalCount?: number;
  resourceVersion: string;
}

/** Relay's argument rules, checked before anything is read. */
export function checkConnectionArgs(a: ConnectionArgs): { n: number; backward: boolean } {
  const has = (v: unknown) => v !== undefined && v !== null;
  if (has(a.first) && has(a.last)) throw new BadRequest('give first or last, not both');
  if (has(a.first) && has(a.before)) throw new BadRequest('first cannot be combined with before (use last with before)');
  if (has(a.last) && has(a.after)) throw new BadRequest('last cannot be combined with after (use first with after)');
  if (has(a.after) && has(a.before)) throw new BadRequest('give after or before, not both');
  if (has(a.last)) return { n: checkLimit('last', a.last!), backward: true };
  if (has(a.first)) return { n: checkLimit('first', a.first!), backward: false };
  return { n: 20, backward: has(a.before) };
}

/** One page of a connection: `first` after a cursor, or `last` before one. */
export async function listConnection(ctx: OperationContext, entry: ModelEntry, args: ConnectionArgs): Promise<ConnectionResult> {
  const { n, backward } = checkConnectionArgs(args);
  await authorize(ctx, entry, 'list');
  const q = planRequirements(entry, args.labels, args.fields, args.sort);
  const scope = scopeOf(entry, q);
  const token = backward ? args.before : args.after;
  const from = token === undefined || token === null ? undefined : decodeCursor(scope, token, backward ? 'before cursor' : 'after cursor');
  const reading = readWithin(ctx, entry.limits, () => readPage(entry, q, n, from, backward), (p) => p.items);
  const [page, totalCount] = args.total ? await Promise.all([reading, count(entry, q)]) : [await reading, undefined];
  // Whether anything lies on the other side of the page (the cursor's object included): one
  // object at most, from the index, read only when the answer is (hasPreviousPage after a
  // cursor, hasNextPage before one; a client paging on reads neither).
  let other: Promise<boolean> | undefined;
  const behind = () =>
    from === undefined ? false : (other ??= readPage(entry, q, 1, from, !backward, true).then((p) => p.items.length > 0, () => false));
  return connectionResult(scope, page, backward, behind, totalCount);
}

/**
 * The cursors of one page: each made only when it is read (a client that pages by endCursor
 * reads one), and once (the last edge's cursor is also the endCursor).
 */
class Cursors {
  private readonly made: string[] = [];
  constructor(
    private readonly encode: (key: SortKey) => string,
    private readonly keys: readonly SortKey[],
  ) {}

  at(i: number): string | null {
    return i < 0 || i >= this.keys.length ? null : (this.made[i] ??= this.encode(this.keys[i]!));
  }
}

/** One edge: its cursor is made when read (a class, so a page of edges shares one getter). */
class Edge {
  constructor(
    readonly node: ApiObject,
    private readonly cursors: Cursors,
    private readonly i: number,
  ) {}

  get cursor(): string {
    return this.cursors.at(this.i)!;
  }
}

/**
 * A connection's pageInfo: a class, not an object literal with getters. Such a literal makes new
 * getter closures and a dictionary-mode object on every call, and V8's young-generation GC then
 * kept every page it was built from alive (the rows, keys and cursors) until a full GC: about
 * 1 MB promoted per scavenge under load, and scavenges five times as long.
 * test/hardening/connection-garbage.test.ts measures it.
 */
class ConnectionPageInfo {
  constructor(
    private readonly cursors: Cursors,
    private readonly n: number,
    private readonly more: boolean,
    private readonly backward: boolean,
    private readonly behind: () => boolean | Promise<boolean>,
  ) {}
  get hasNextPage(): boolean | Promise<boolean> {
    return this.backward ? this.behind() : this.more;
  }
  get hasPreviousPage(): boolean | Promise<boolean> {
    return this.backward ? this.more : this.behind();
  }
  get startCursor(): string | null {
    return this.cursors.at(0);
  }
  get endCursor(): string | null {
    return this.cursors.at(this.n - 1);
  }
}

/**
 * The answer of one connection from the page read (in the query's order; `more`: whether more
 * lie beyond it in the reading direction) and `behind`: whether anything lies on the other side,
 * asked only when pageInfo needs it.
 */
export function connectionResult(
  scope: CursorScope,
  page: { items: ApiObject[]; keys: SortKey[]; more: boolean; resourceVersion: string },
  backward: boolean,
  behind: () => boolean | Promise<boolean>,
  totalCount: number | undefined,
): ConnectionResult {
  const cursors = new Cursors(cursorEncoder(scope), page.keys);
  return {
    edges: page.items.map((node, i) => new Edge(node, cursors, i)),
    pageInfo: new ConnectionPageInfo(cursors, page.keys.length, page.more, backward, behind),
    ...(totalCount !== undefined && { totalCount }),
    resourceVersion: page.resourceVersion,
  };
}

/**
 * Plans typed requirements (GraphQL `where`) as list parameters are planned: fields must be
 * indexed, the sort too; values of numeric indexes in canonical form, and range requirements on
 * them marked numeric (for in-memory matching, query/match.ts).
 */
export function planRequirements(entry: ModelEntry, labels: Requirement[], fields: Requirement[], sort: SortSpec[]): StoreQuery {
  // The bounds of REST selectors (the gateway's selectorTerms, selectorChars) hold for typed filters too.
  const { selectorTerms, selectorChars } = entry.limits;
  const terms = [...labels, ...fields];
  if (terms.length > selectorTerms) {
    throw new BadRequest(`where has ${terms.length} conditions; at most ${selectorTerms} are allowed (limit: selector terms)`);
  }
  const chars = terms.reduce((n, r) => n + r.key.length + r.values.reduce((m, v) => m + v.length + 1, 0), 0);
  if (chars > selectorChars) {
    throw new BadRequest(`where is ${chars} characters long; at most ${selectorChars} are allowed (limit: selector length)`);
  }
  const indexes = indexesOf(entry);
  checkFieldsIndexed(fields, indexes);
  const q = planListQuery({ labels, fields, sort }, indexes);
  const numeric = new Set(entry.model.indexes.filter((i) => i.numeric).map((i) => i.name));
  if (numeric.size === 0) return q;
  const where = canonicalWhere(q.where, numeric).map((r): IndexRequirement => (numeric.has(r.index) && isRangeOp(r.op) ? { ...r, numeric: true } : r));
  return { ...q, where };
}

export async function count(entry: ModelEntry, q: StoreQuery): Promise<number> {
  try {
    return (await entry.store.list({ where: q.where, sort: q.sort, offset: 0, limit: 0 })).total;
  } catch (e) {
    storeFailure(entry, '', e);
  }
}

/** Reverses an order: each term's direction (objects without a value move to the other end alike). */
export const reversed = (sort: SortTerm[]): SortTerm[] =>
  keysetTerms(sort).map((t) => ({ index: t.index, direction: t.direction === 'asc' ? 'desc' : 'asc' }));

/**
 * `limit` objects after `after` in the query's order, or (backward) the `limit` objects just
 * before it, still in the query's order; `more`: whether more lie beyond them in that direction.
 */
async function readPage(entry: ModelEntry, q: StoreQuery, limit: number, after: SortKey | undefined, backward: boolean, inclusive = false) {
  try {
    const resourceVersion = await entry.store.resourceVersion();
    const sort = backward ? reversed(q.sort) : keysetTerms(q.sort);
    const page = await entry.store.page({ where: q.where, sort, limit, ...(after && { after }), ...(inclusive && { inclusive }) });
    const items = page.items.map((o) => present(entry, o));
    if (backward) {
      items.reverse();
      page.keys.reverse();
    }
    return { items, keys: page.keys, more: page.more, resourceVersion };
  } catch (e) {
    storeFailure(entry, '', e);
  }
}
