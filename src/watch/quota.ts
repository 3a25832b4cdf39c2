/**
 * Concurrent watches per user (LIMITS.watchesPerUser, env SVC_MAX_WATCHES_PER_USER): a wrapper
 * around the watch operation, so REST (WebSocket and ndjson) and GraphQL subscriptions share
 * one count. The 101st concurrent watch of one user gets 429 until one of them stops.
 *
 * Generic over the watch operation's signature: the first argument is the OperationContext;
 * the result releases the slot when it is a stop function (called), an object with a `stop`,
 * `close` or `return` method (called). A failed open
 * releases at once. Anonymous callers share the `anonymous` count.
 */
import { TooManyRequests } from '../errors/index.js';
import { resolveLimits } from '../limits.js';
import type { OperationContext } from '../operations/types.js';

const active = new Map<string, number>();
let limit: number | undefined;

/** Watches open now for a user (tests and metrics). */
export const activeWatches = (username: string): number => active.get(username) ?? 0;

function acquire(username: string): () => void {
  limit ??= resolveLimits().watchesPerUser;
  const n = active.get(username) ?? 0;
  if (n >= limit) {
    throw new TooManyRequests(`user "${username}" has ${n} watches open; at most ${limit} are allowed (limit: concurrent watches per user)`, 1);
  }
  active.set(username, n + 1);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const left = (active.get(username) ?? 1) - 1;
    if (left > 0) active.set(username, left);
    else active.delete(username);
  };
}

/** Makes `release` run once when the watch handle is stopped. */
function releasing<R>(handle: R, release: () => void): R {
  if (typeof handle === 'function') {
    const stop = handle as unknown as (...a: unknown[]) => unknown;
    return ((...a: unknown[]) => {
      release();
      return stop(...a);
    }) as unknown as R;
  }
  if (typeof handle === 'object' && handle !== null) {
    const h = handle as Record<string, unknown>;
    for (const method of ['stop', 'close', 'return'] as const) {
      const fn = h[method];
      if (typeof fn === 'function') {
        h[method] = (...a: unknown[]) => {
          release();
          return (fn as (...a: unknown[]) => unknown).apply(handle, a);
        };
      }
    }
  }
  return handle;
}

export function withWatchQuota<A extends [OperationContext, ...unknown[]], R>(
  watch: (...args: A) => Promise<R>,
): (...args: A) => Promise<R> {
  return async (...args: A): Promise<R> => {
    const release = acquire(args[0].caller.username);
    try {
      return releasing(await watch(...args), release);
    } catch (e) {
      release();
      throw e;
    }
  };
}
