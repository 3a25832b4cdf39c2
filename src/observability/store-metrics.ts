/**
 * Store operation timing (svc_store_operation_duration_seconds): a decorator over the Store port,
 * applied at the composition root like store/deadline.ts, so neither adapter knows of it. Every
 * promise-returning method of the Store and of each ModelStore it hands out is timed, labelled
 * with the store kind and the method name (a fixed set: get, create, update, remove, list, …);
 * `watch` subscriptions and `close` pass through.
 */
import { decorateStore, isThenable, type MethodWrapper } from '../store/decorate.js';
import type { Store } from '../store/types.js';

/** `store` with each operation's duration reported to `observe(store.kind, operation, seconds)`. */
export function withStoreMetrics(store: Store, observe: (store: string, operation: string, seconds: number) => void): Store {
  const kind = store.kind;
  const timing: MethodWrapper = (method, call) => (...args) => {
    const start = process.hrtime.bigint();
    const result = call(...args);
    if (!isThenable(result)) return result;
    const done = () => observe(kind, method, Number(process.hrtime.bigint() - start) / 1e9);
    return result.then(
      (value) => {
        done();
        return value;
      },
      (err: unknown) => {
        done();
        throw err;
      },
    );
  };
  return decorateStore(store, [], () => timing);
}
