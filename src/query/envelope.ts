/**
 * The list envelope every transport returns for a page of objects (REST list, GraphQL list,
 * personal access tokens): page numbers and totals around the items of one store query.
 */
import type { ApiObject } from '../store/object.js';
import type { StoreQuery } from '../store/types.js';

/** One page of a list, as every door returns it (docs/API.md §4). */
export interface ListResult {
  page: number;
  size: number;
  total: number;
  totalPages: number;
  first: boolean;
  last: boolean;
  hasNext: boolean;
  hasPrevious: boolean;
  items: ApiObject[];
  resourceVersion: string;
}

/** Wraps the items a query read (and the total it matched) in the ListResult envelope. */
export function envelope(query: StoreQuery, items: ListResult['items'], total: number, resourceVersion: string): ListResult {
  if (query.limit === undefined) {
    // Unpaged: one page holding every match.
    return {
      page: 1,
      size: total,
      total,
      totalPages: 1,
      first: true,
      last: true,
      hasNext: false,
      hasPrevious: false,
      items,
      resourceVersion,
    };
  }
  const size = query.limit;
  const page = Math.floor(query.offset / size) + 1;
  const totalPages = Math.ceil(total / size);
  return {
    page,
    size,
    total,
    totalPages,
    first: page === 1,
    last: page >= totalPages,
    hasNext: page < totalPages,
    hasPrevious: page > 1,
    items,
    resourceVersion,
  };
}
