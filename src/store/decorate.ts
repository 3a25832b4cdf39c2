/**
 * The one shape of a decorator over the Store port (the deadline in store/deadline.ts, the
 * operation timing of observability/store-metrics.ts, the spans of observability/tracing.ts): a Proxy that wraps each
 * method of the Store, and of every ModelStore its `model()` hands out, once per method name.
 * Adapters never learn of it. `watch` and `close` always pass through (a subscription and the
 * lifecycle are no round trip of their own); a decorator may pass more through, `model` included.
 */
import type { ModelStore, Store } from './types.js';

/** Wraps one method: `call` runs the original with the arguments it is given. */
export type MethodWrapper = (method: string, call: (...args: unknown[]) => unknown) => (...args: unknown[]) => unknown;

const ALWAYS_PASS = ['watch', 'close'];

export const isThenable = (v: unknown): v is Promise<unknown> =>
  typeof v === 'object' && v !== null && typeof (v as { then?: unknown }).then === 'function';

/** `target` with every method not in `pass` wrapped by `wrap` (built on first use, then kept). */
function wrapMethods<T extends object>(target: T, pass: ReadonlySet<PropertyKey>, wrap: MethodWrapper): T {
  const cache = new Map<PropertyKey, unknown>();
  return new Proxy(target, {
    get(obj, prop, receiver) {
      const value = Reflect.get(obj, prop, receiver);
      if (typeof value !== 'function') return value;
      if (pass.has(prop) || typeof prop !== 'string') return value.bind(obj);
      let wrapped = cache.get(prop);
      if (!wrapped) {
        wrapped = wrap(prop, (...args: unknown[]) => (value as (...a: unknown[]) => unknown).apply(obj, args));
        cache.set(prop, wrapped);
      }
      return wrapped;
    },
  });
}

/**
 * `store` decorated: `wrapperFor()` wraps the Store's own methods, `wrapperFor(key)` those of the
 * ModelStore of model `key`. `model` itself is wrapped by the Store's wrapper unless `pass` names it.
 */
export function decorateStore(store: Store, pass: readonly string[], wrapperFor: (modelKey?: string) => MethodWrapper): Store {
  const passing = new Set<PropertyKey>([...ALWAYS_PASS, ...pass]);
  const outer = wrapperFor();
  const base = wrapMethods(store, new Set([...passing, 'model']), outer);
  const open = (...args: unknown[]) => store.model(...(args as Parameters<Store['model']>));
  const model = passing.has('model') ? open : outer('model', open);
  return new Proxy(base, {
    get(obj, prop, receiver) {
      if (prop !== 'model') return Reflect.get(obj, prop, receiver);
      return async (...args: Parameters<Store['model']>): Promise<ModelStore> =>
        wrapMethods((await model(...args)) as ModelStore, passing, wrapperFor(args[0].key));
    },
  });
}
