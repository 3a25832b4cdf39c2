/**
 * Plans parsed list parameters onto a model's indexes (store/types.ts StoreQuery). Adapters
 * only execute the plan; every "is this allowed" decision is made here.
 *
 *  - labels: onto `metadata.labels` (values `k` and `k=v`): `k=v`/in → in [`k=v`…],
 *    `!=`/notin → notin [`k=v`…] (objects lacking k match), `k` → in [`k`], `!k` → notin [`k`].
 *  - fields: must name an index of the model, then map 1:1 (exists/notexists carry no values).
 *  - sort: fields must be indexes, no field twice. None given → creationTimestamp desc, name asc.
 *    `metadata.name` is appended (direction of the last term) unless present, so the order is
 *    total and a declared `(x, name)` index serves both directions.
 *  - page: integer ≥ 1, default 1. size: integer 1…limits.pageSize, undefined = all matches
 *    (then offset 0 and no limit, whatever the page). offset = (page-1)*size.
 */
import { BadRequest } from '../errors/index.js';
import { LIMITS, type GatewayLimits } from '../limits.js';
import type { IndexRequirement, SortTerm, StoreQuery } from '../store/types.js';
import { fieldRequirementToIndex, labelRequirementToIndex } from './match.js';
import { parseSelector } from './selector.js';
import { parseSort } from './sort.js';
import type { ListParams, Requirement, Selectors, SortSpec } from './types.js';

export { matchesSelectors, matchesWhere, matchesIndexRequirement, labelIndexValues } from './match.js';

/** The default largest accepted `size` (LIMITS.pageSize; a gateway's `limits` may set another). */
export const MAX_PAGE_SIZE = LIMITS.pageSize;

export const DEFAULT_SORT: readonly SortTerm[] = [
  { index: 'metadata.creationTimestamp', direction: 'desc' },
  { index: 'metadata.name', direction: 'asc' },
];

export interface ListQueryInput {
  labels: Requirement[];
  fields: Requirement[];
  sort: SortSpec[];
  page?: number;
  size?: number;
}

const listOf = (indexes: ReadonlySet<string>): string => [...indexes].sort().join(', ') || '(none)';

/** Throws unless every field requirement names an index of the model. */
export function checkFieldsIndexed(fields: readonly Requirement[], indexes: ReadonlySet<string>): void {
  for (const f of fields) {
    if (!indexes.has(f.key)) {
      throw new BadRequest(`field "${f.key}" is not indexed; indexed fields: ${listOf(indexes)}`);
    }
  }
}

/** `limits`: the gateway's (pageSize: the largest `size`; omit `size` to get every match). */
export function planListQuery(input: ListQueryInput, indexes: ReadonlySet<string>, limits: Readonly<GatewayLimits> = LIMITS): StoreQuery {
  checkFieldsIndexed(input.fields, indexes);
  const where: IndexRequirement[] = [
    ...input.labels.map(labelRequirementToIndex),
    ...input.fields.map(fieldRequirementToIndex),
  ];
  const sort = planSort(input.sort, indexes);
  const page = checkInteger('page', input.page) ?? 1;
  const size = checkInteger('size', input.size);
  if (size === undefined) return { where, sort, offset: 0 };
  if (size > limits.pageSize) throw new BadRequest(`size must be at most ${limits.pageSize} (omit size for all objects)`);
  const offset = (page - 1) * size;
  if (!Number.isSafeInteger(offset)) throw new BadRequest(`page ${page} is out of range`);
  return { where, sort, offset, limit: size };
}

function planSort(specs: readonly SortSpec[], indexes: ReadonlySet<string>): SortTerm[] {
  if (specs.length === 0) return DEFAULT_SORT.map((t) => ({ ...t }));
  const seen = new Set<string>();
  const out: SortTerm[] = [];
  for (const s of specs) {
    const field = s.field === 'name' ? 'metadata.name' : s.field;
    if (!indexes.has(field)) {
      throw new BadRequest(`cannot sort by "${field}": not an indexed field; sortable fields: ${listOf(indexes)}`);
    }
    if (seen.has(field)) throw new BadRequest(`sort field "${field}" is given more than once`);
    seen.add(field);
    out.push({ index: field, direction: s.direction });
  }
  if (!seen.has('metadata.name')) out.push({ index: 'metadata.name', direction: out[out.length - 1]!.direction });
  return out;
}

function checkInteger(name: 'page' | 'size', n: number | undefined): number | undefined {
  if (n === undefined) return undefined;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 1) {
    throw new BadRequest(`${name} must be an integer of at least 1, got ${typeof n === 'number' ? String(n) : JSON.stringify(n)}`);
  }
  return n;
}

/**
 * Strict parse of a `page`/`size` query-string value for transports: blank or absent →
 * undefined; otherwise decimal digits only (no sign, exponent or fraction), value ≥ 1.
 */
export function parsePositiveInt(name: 'page' | 'size', raw: string | null | undefined): number | undefined {
  if (raw === null || raw === undefined || raw.trim() === '') return undefined;
  const t = raw.trim();
  if (!/^[0-9]+$/.test(t)) throw new BadRequest(`${name} must be an integer of at least 1, got "${raw}"`);
  return checkInteger(name, Number(t));
}

/** Parses selectors and checks that every field selector names an index (used by watch). */
export function parseSelectors(
  labelSelector: string[] | string | undefined,
  fieldSelector: string[] | string | undefined,
  indexes: ReadonlySet<string>,
): Selectors {
  const labels = parseSelector(labelSelector, 'label');
  const fields = parseSelector(fieldSelector, 'field');
  checkFieldsIndexed(fields, indexes);
  return { labels, fields };
}

/** Parses and plans a list request's parameters in one step. */
export function parseListParams(params: ListParams, indexes: ReadonlySet<string>, limits: Readonly<GatewayLimits> = LIMITS): StoreQuery {
  checkParamSizes(params, limits);
  const labels = parseSelector(params.labelSelector, 'label');
  const fields = parseSelector(params.fieldSelector, 'field');
  if (labels.length + fields.length > limits.selectorTerms) {
    throw new BadRequest(
      `the selectors have ${labels.length + fields.length} terms; at most ${limits.selectorTerms} are allowed (limit: selector terms)`,
    );
  }
  const sort = parseSort(params.sort);
  if (sort.length > limits.sortKeys) {
    throw new BadRequest(`${sort.length} sort keys given; at most ${limits.sortKeys} are allowed (limit: sort keys)`);
  }
  return planListQuery({ labels, fields, sort, page: params.page, size: params.size }, indexes, limits);
}

const asList = (v: string[] | string | undefined): string[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

/** Raw selector and sort text is bounded before it is parsed (selectorChars, sortKeys). */
function checkParamSizes(params: ListParams, limits: Readonly<GatewayLimits>): void {
  const selectors = [...asList(params.labelSelector), ...asList(params.fieldSelector)];
  const chars = selectors.reduce((n, s) => n + String(s).length, 0);
  if (chars > limits.selectorChars) {
    throw new BadRequest(
      `the selectors are ${chars} characters long; at most ${limits.selectorChars} are allowed (limit: selector length)`,
    );
  }
  const sorts = asList(params.sort);
  if (sorts.length > limits.sortKeys) {
    throw new BadRequest(`${sorts.length} sort keys given; at most ${limits.sortKeys} are allowed (limit: sort keys)`);
  }
}
