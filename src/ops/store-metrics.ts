/**
 * Store operation timing (svc_store_operation_duration_seconds): a decorator over the Store port,
 * applied at the composition root like store/deadline.ts, so neither adapter knows of it. Every
 * promise-returning method of the Store and of each ModelStore it hands out is timed, labelled
 * with the store kind and the method name (a fixed set: get, create, update, remove, list, …);
 * `watch` subscriptions and `close` pass through.
 */
import type { ModelStore, Store } from '../store/types.js';

const UNTIMED = new Set<PropertyKey>(['watch', 'close']);

type Observe = (operation: string, seconds: number) => void;

const isThenable = (v: unknown): v is Promise<unknown> =>
  typeof v === 'object' && v !== null && typeof (v as { then?: unknown }).then === 'function';

function timed<T extends object>(target: T, observe: Observe, wrapResult?: (operation: string, result: unknown) => unknown): T {
  const cache = new Map<PropertyKey, unknown>();
  return new Proxy(target, {
    get(obj, prop, receiver) {
      const value = Reflect.get(obj, prop, receiver);
      if (typeof value !== 'function') return value;
      if (UNTIMED.has(prop) || typeof prop !== 'string') return value.bind(obj);
      let wrapped = cache.get(prop);
      if (!wrapped) {
        wrapped = function (...args: unknown[]) {
          const start = process.hrtime.bigint();
          const result = (value as (...a: unknown[]) => unknown).apply(obj, args);
          if (!isThenable(result)) return result;
          const done = () => observe(prop, Number(process.hrtime.bigint() - start) / 1e9);
          const p = Promise.resolve(result).finally(done);
          return wrapResult ? p.then((r) => wrapResult(prop, r)) : p;
        };
        cache.set(prop, wrapped);
      }
      return wrapped;
    },
  });
}

/** `store` with each operation's duration reported to `observe(store.kind, operation, seconds)`. */
export function withStoreMetrics(store: Store, observe: (store: string, operation: string, seconds: number) => void): Store {
  const kind = store.kind;
  const report: Observe = (operation, seconds) => observe(kind, operation, seconds);
  return timed(store, report, (operation, result) => (operation === 'model' ? timed(result as ModelStore, report) : result));
}
