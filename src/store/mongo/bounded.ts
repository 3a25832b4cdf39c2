/**
 * Driver operations with a time bound of their own, so an operation the store deadline
 * (store/deadline.ts) gave up on does not keep waiting on a stalled server.
 *
 * The deadline decorator answers the client with 503 but cannot stop the adapter's promise; on a
 * paused server (SIGSTOP, a network partition) each abandoned driver operation then held a pool
 * connection until `socketTimeoutMS` (30 s), and a request's remaining operations ran after it,
 * so when the server returned it first worked off that backlog. The driver's own client-side
 * timeout (`timeoutMS`) is a no-op in mongodb 6.22, and `maxTimeMS` is enforced by the server,
 * which cannot help when the server does not run. What the driver does honour is an AbortSignal
 * per operation: on abort it fails the operation (also while waiting for a pool connection or
 * server selection) and closes that one connection, so the server drops the command and the
 * pool replaces the connection. `bounded(collection, ms)` passes a signal that aborts `ms` (to
 * `ms` + SHARE_MS) after the operation starts to every operation of the request path (not to index builds or feed polling, which use the plain
 * collection and may legitimately run longer).
 *
 * Operations share their signals (TimeBounds): a timeout signal costs about 18 µs of CPU over its
 * life (its timer fires even after the operation is done, and the abort builds a DOMException
 * with a stack), several times per write; one signal for every operation that starts within
 * SHARE_MS of the first costs that once. Each operation is still aborted no sooner than its
 * bound, and at most SHARE_MS later.
 */
import { setMaxListeners } from 'node:events';
import type { Collection, Document } from 'mongodb';
import { StoreTimeout } from '../errors.js';

/** Operations that start within this long of each other share one abort signal. */
export const SHARE_MS = 50;

/** The abort signals of one store's operations (one per bound and SHARE_MS window). */
export class TimeBounds {
  private readonly latest = new Map<number, { signal: AbortSignal; until: number }>();

  /** A signal that aborts at least `ms` and at most `ms + SHARE_MS` from now. */
  signal(ms: number): AbortSignal {
    const now = performance.now();
    let e = this.latest.get(ms);
    if (!e || now >= e.until) {
      const signal = AbortSignal.timeout(ms + SHARE_MS);
      // Every operation in flight adds a listener; more than 10 is expected, not a leak.
      setMaxListeners(0, signal);
      e = { signal, until: now + SHARE_MS };
      this.latest.set(ms, e);
    }
    return e.signal;
  }

  /**
   * Options carrying a time bound, for single calls on a plain collection. (Typed `object`:
   * the driver honours `signal` on every operation, its types declare it on reads only.)
   */
  within(ms: number | undefined): object {
    return ms === undefined ? {} : { signal: this.signal(ms) };
  }
}

/** Position of the options argument of each bounded method. */
const OPTIONS_AT: Record<string, number> = {
  findOne: 1,
  find: 1,
  countDocuments: 1,
  insertOne: 1,
  insertMany: 1,
  deleteOne: 1,
  deleteMany: 1,
  findOneAndDelete: 1,
  updateOne: 2,
  updateMany: 2,
  replaceOne: 2,
};

/**
 * `collection` whose operations listed in OPTIONS_AT are aborted after `ms` (the error is a
 * driver timeout or abort error, which `guard` maps to `Unavailable`). `ms` undefined: unchanged.
 */
export function bounded<T extends Document>(collection: Collection<T>, ms: number | undefined, bounds = new TimeBounds()): Collection<T> {
  if (ms === undefined) return collection;
  return new Proxy(collection, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      const at = typeof prop === 'string' && Object.hasOwn(OPTIONS_AT, prop) ? OPTIONS_AT[prop]! : undefined;
      if (typeof value !== 'function') return value;
      if (at === undefined) return (value as (...a: unknown[]) => unknown).bind(target);
      return (...args: unknown[]) => {
        const given = args[at];
        // AbortSignal.timeout's timer is unref'd: it never keeps the process alive.
        const signal = bounds.signal(ms);
        args[at] = { ...(typeof given === 'object' && given !== null ? given : {}), signal };
        const result = (value as (...a: unknown[]) => unknown).apply(target, args);
        // `find` returns a cursor (its timeout errors are mapped by `guard`); the others a promise.
        if (!(result instanceof Promise)) return result;
        return result.catch((e: unknown) => {
          // Whatever the driver reports for an aborted operation (a timeout error, a bulk write
          // error with no write errors), it is "the server did not answer in time".
          if (signal.aborted) throw new StoreTimeout(ms, `MongoDB did not answer ${String(prop)} within ${ms} ms`);
          throw e;
        });
      };
    },
  });
}
