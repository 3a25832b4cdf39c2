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
 * pool replaces the connection. `bounded(collection, ms)` passes `AbortSignal.timeout(ms)` to
 * every operation of the request path (not to index builds or feed polling, which use the plain
 * collection and may legitimately run longer).
 */
import type { Collection, Document } from 'mongodb';
import { StoreTimeout } from '../errors.js';

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
export function bounded<T extends Document>(collection: Collection<T>, ms: number | undefined): Collection<T> {
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
        const signal = AbortSignal.timeout(ms);
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

/**
 * Options carrying a fresh time bound, for single calls on a plain collection. (Typed `object`:
 * the driver honours `signal` on every operation, its types declare it on reads only.)
 */
export const within = (ms: number | undefined): object => (ms === undefined ? {} : { signal: AbortSignal.timeout(ms) });
