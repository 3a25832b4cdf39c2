/**
 * Which query parameters a route accepts. Any other parameter is refused with 400 naming it, so
 * a misspelled `fieldselector` can never be dropped silently and widen a list or a
 * deletecollection to the whole collection. Plugin custom routes are the one exception: their
 * handler receives the whole request and reads its own query string.
 */
import { BadRequest } from '../errors/index.js';

/** Selectors and paging, read by list and deletecollection. */
export const LIST_PARAMS = ['page', 'size', 'sort', 'labelSelector', 'fieldSelector'] as const;
/** The watch parameters (accepted on a collection GET, where `watch=true` turns a list into a watch). */
export const WATCH_PARAMS = ['watch', 'resourceVersion', 'allowWatchBookmarks', 'timeoutSeconds'] as const;

/** Keyset pages (docs/API.md §12), on a collection GET only. */
export const KEYSET_PARAMS = ['limit', 'continue'] as const;

export const COLLECTION_GET_PARAMS: ReadonlySet<string> = new Set([...LIST_PARAMS, ...KEYSET_PARAMS, ...WATCH_PARAMS]);
export const DELETECOLLECTION_PARAMS: ReadonlySet<string> = new Set(LIST_PARAMS);
/** GraphQL over HTTP's GET parameters (a POST carries them in its body). */
export const GRAPHQL_PARAMS: ReadonlySet<string> = new Set(['query', 'operationName', 'variables', 'extensions']);
export const NO_PARAMS: ReadonlySet<string> = new Set();

/** Throws 400 when `query` holds a parameter outside `allowed`; names each one, with a likely intended spelling. */
export function rejectUnknownParams(query: URLSearchParams, allowed: ReadonlySet<string>): void {
  let unknown: string[] | undefined;
  for (const key of query.keys()) {
    if (!allowed.has(key) && !unknown?.includes(key)) (unknown ??= []).push(key);
  }
  if (!unknown) return;
  const named = unknown.map((k) => {
    const shown = JSON.stringify(k.length > 64 ? `${k.slice(0, 64)}…` : k);
    const meant = [...allowed].find((a) => a.toLowerCase() === k.toLowerCase());
    return meant ? `${shown} (did you mean "${meant}"?)` : shown;
  });
  const accepted = allowed.size ? `; this request accepts ${[...allowed].join(', ')}` : '; this request accepts none';
  throw new BadRequest(`unknown query parameter${unknown.length > 1 ? 's' : ''} ${named.slice(0, 10).join(', ')}${accepted}`);
}
