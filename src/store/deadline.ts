/**
 * A deadline on every store operation: `withDeadline(store, ms)` returns a Store whose async
 * methods (and those of every ModelStore it hands out) reject with StoreError `Unavailable`
 * (→ 503) when the adapter has not answered within `ms`. A decorator over the port, like the
 * Kubernetes cacher over storage.Interface, so adapters stay unaware of it.
 *
 * Generic on purpose: every method that returns a promise gets the deadline, whatever its
 * name or signature; `watch` and every method returning something else (a subscription, a
 * value) pass through unchanged. `model()` (index builds at registration) is not limited; the
 * ModelStore it returns is. The decorator cannot cancel the adapter's promise: a write that
 * outlives its deadline may still complete (as with any timeout, 503 means "outcome unknown").
 * The MongoDB adapter bounds each of its driver operations by the same time (mongo/bounded.ts),
 * so on a stalled server an abandoned operation is cancelled instead of holding a connection.
 */
import { StoreError } from './errors.js';
import type { ModelStore, Store } from './types.js';

/** Methods never wrapped: long-lived or lifecycle calls. */
const PASS_THROUGH = new Set<PropertyKey>(['watch', 'close', 'model']);

function timed<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new StoreError('Unavailable', `the store did not answer ${what} within ${ms} ms`)),
      ms,
    );
  });
  // A late failure of the abandoned operation must not become an unhandled rejection.
  promise.catch(() => undefined);
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

const isThenable = (v: unknown): v is Promise<unknown> =>
  typeof v === 'object' && v !== null && typeof (v as { then?: unknown }).then === 'function';

/** Wraps every promise-returning method of `target` (except PASS_THROUGH) with the deadline. */
function decorate<T extends object>(target: T, ms: number, label: string): T {
  const cache = new Map<PropertyKey, unknown>();
  return new Proxy(target, {
    get(obj, prop, receiver) {
      const value = Reflect.get(obj, prop, receiver);
      if (typeof value !== 'function' || PASS_THROUGH.has(prop)) {
        return typeof value === 'function' ? value.bind(obj) : value;
      }
      let wrapped = cache.get(prop);
      if (!wrapped) {
        wrapped = function (this: unknown, ...args: unknown[]) {
          const result = (value as (...a: unknown[]) => unknown).apply(obj, args);
          return isThenable(result) ? timed(Promise.resolve(result), ms, `${label}.${String(prop)}`) : result;
        };
        cache.set(prop, wrapped);
      }
      return wrapped;
    },
  });
}

export function withDeadline(store: Store, ms: number): Store {
  const base = decorate(store, ms, store.kind);
  return new Proxy(base, {
    get(obj, prop, receiver) {
      if (prop !== 'model') return Reflect.get(obj, prop, receiver);
      return async (...args: Parameters<Store['model']>): Promise<ModelStore> =>
        decorate(await store.model(...args), ms, args[0].key);
    },
  });
}
