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

/** `promise`, or StoreTimeout after `ms` (one promise and one timer per operation). */
function timed<T>(promise: PromiseLike<T>, ms: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new StoreTimeout(ms, `the store did not answer ${what} within ${ms} ms`)), ms);
    // A late outcome of the abandoned operation settles nothing (the promise is settled), and
    // its failure is handled here, so it never becomes an unhandled rejection.
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}

export function withDeadline(store: Store, ms: number): Store {
  // `model()` (index builds at registration) is not limited; the ModelStore it returns is.
  return decorateStore(store, ['model'], (key = store.kind) => (method, call) => (...args) => {
    const result = call(...args);
    return isThenable(result) ? timed(result, ms, `${key}.${method}`) : result;
  });
}
