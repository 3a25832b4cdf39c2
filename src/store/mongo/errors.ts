/** Mapping of driver errors onto StoreError. */
import {
  MongoNetworkError,
  MongoNotConnectedError,
  MongoServerSelectionError,
  MongoTopologyClosedError,
} from 'mongodb';
import { StoreError } from '../errors.js';

/** True for "the server cannot be reached" (as opposed to "the server refused this"). */
export const isUnreachable = (e: unknown): boolean =>
  e instanceof MongoServerSelectionError ||
  e instanceof MongoNetworkError ||
  e instanceof MongoNotConnectedError ||
  e instanceof MongoTopologyClosedError ||
  SOCKET_ERRORS.has((e as { code?: unknown } | null)?.code as string) ||
  TIMEOUT_ERRORS.has((e as { name?: unknown } | null)?.name as string);

/**
 * An operation given up on by its time bound (bounded.ts: AbortSignal.timeout) or waiting too
 * long for a pool connection.
 */
const TIMEOUT_ERRORS = new Set(['MongoOperationTimeoutError', 'MongoWaitQueueTimeoutError', 'TimeoutError', 'AbortError']);

/**
 * Socket errors the driver can pass through unwrapped when the server dies mid-write (e.g.
 * "This socket has been ended by the other party", EPIPE).
 */
const SOCKET_ERRORS = new Set(['EPIPE', 'ECONNRESET', 'ECONNREFUSED', 'ETIMEDOUT', 'ERR_STREAM_DESTROYED', 'ERR_STREAM_WRITE_AFTER_END']);

export const isDuplicateKey = (e: unknown): boolean => (e as { code?: unknown } | null)?.code === 11000;

/** Runs a driver call; unreachable-server errors become StoreError `Unavailable`. */
export async function guard<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (isUnreachable(e)) throw new StoreError('Unavailable', `MongoDB is unavailable: ${(e as Error).message}`);
    throw e;
  }
}
