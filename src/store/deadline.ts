/**
 * A deadline on every store operation: `withDeadline(store, ms)` returns a Store whose async
 * methods (and those of every ModelStore it hands out) reject with StoreTimeout (code
 * `Unavailable`, → 503 "did not answer within …") when the adapter has not answered within `ms`.
 * A decorator over the port, like the Kubernetes cacher over storage.Interface, so adapters stay
 * unaware of it.
 *
 * Generic on purpose: every method that returns a promise gets the deadline, whatever its
 * name or signature; `watch` and every method returning something else (a subscription, a
 * value) pass through unchanged. `model()` (index builds at registration) is not limited; the
 * ModelStore it returns is. The decorator cannot cancel the adapter's promise: a write that
 * outlives its deadline may still complete (as with any timeout, 503 means "outcome unknown").
 * The MongoDB adapter bounds each of its driver operations by the same time (mongo/bounded.ts),
 * so on a stalled server an abandoned operation is cancelled instead of holding a connection.
 */
import { StoreTimeout } from './errors.js';
import { decorateStore, isThenable } from './decorate.js';
import type { Store } from './types.js';

function timed<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new StoreTimeout(ms, `the store did not answer ${what} within ${ms} ms`)),
      ms,
    );
  });
  // A late failure of the abandoned operation must not become an unhandled rejection.
  promise.catch(() => undefined);
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

export function withDeadline(store: Store, ms: number): Store {
  // `model()` (index builds at registration) is not limited; the ModelStore it returns is.
  return decorateStore(store, ['model'], (key = store.kind) => (method, call) => (...args) => {
    const result = call(...args);
    return isThenable(result) ? timed(Promise.resolve(result), ms, `${key}.${method}`) : result;
  });
}
