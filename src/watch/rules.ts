/**
 * The watch rules every door shares, written once:
 *  - `watch=true` (or `1`) on a collection GET asks for a stream instead of a list;
 *  - a watch denied on the collection but granted on named objects (`resourceNames`, the
 *    decision's `names`) opens restricted to them: `watchScope` says which objects a decision
 *    lets a watch see, `admitsWatch` whether a request may go on at all.
 */
import type { Decision } from '../identity/authorizer.js';

/** Names the caller may watch: undefined = every object; otherwise only these. */
export type WatchScope = ReadonlySet<string> | undefined;

export function isWatchQuery(params: URLSearchParams): boolean {
  const w = params.get('watch');
  return w === 'true' || w === '1';
}

/** What a decision on `watch` lets the caller see; null when it lets the caller see nothing. */
export function watchScope(decision: Decision): WatchScope | null {
  if (decision.allowed) return undefined;
  return decision.names?.size ? decision.names : null;
}

/** Whether a request of `verb` may proceed on `decision`: allowed, or a watch on named objects. */
export function admitsWatch(verb: string, decision: Decision): boolean {
  return decision.allowed || (verb === 'watch' && watchScope(decision) !== null);
}
