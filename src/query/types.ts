/**
 * The parsed form of list parameters, shared by REST, GraphQL and watch.
 * Parsing: query/selector.ts and query/sort.ts. Planning onto indexes: query/plan.ts.
 * In-memory matching with the same semantics (watch filtering): query/match.ts.
 */

/**
 * One selector term. `=`/`==`/`=(a,b)`/`in` → in; `!=`/`notin` → notin; `k` → exists; `!k` → notexists.
 * The range ops (gt, gte, lt, lte: some value compares so with `values[0]`) come from typed
 * GraphQL filters only (graphql/where.ts), on fields; planned onto the index range.
 */
export interface Requirement {
  key: string;
  op: 'in' | 'notin' | 'exists' | 'notexists' | 'gt' | 'gte' | 'lt' | 'lte';
  values: string[];
}

export interface SortSpec {
  field: string;
  direction: 'asc' | 'desc';
}

/** Raw list parameters as received from a transport (each may be repeated). */
export interface ListParams {
  page?: number;
  size?: number;
  sort?: string[];
  labelSelector?: string[];
  fieldSelector?: string[];
  /** Keyset pages (docs/API.md §12): page size, and the token of the page to continue from. */
  limit?: number;
  continue?: string;
}

/** Parsed selectors. */
export interface Selectors {
  labels: Requirement[];
  fields: Requirement[];
}
