/**
 * Neutral storage error codes (like k8s storage/errors.go). Adapters throw these; the
 * registry/operations layer translates them into API errors (errors/index.ts).
 */
export type StoreErrorCode =
  | 'NotFound'
  | 'AlreadyExists'
  | 'Conflict'
  | 'UniqueViolation'
  | 'Expired'
  | 'Unavailable';

export class StoreError extends Error {
  /** Set when the store did not answer within this many ms (StoreTimeout). */
  declare readonly timeoutMs?: number;

  constructor(
    readonly code: StoreErrorCode,
    message: string,
    /** For UniqueViolation: the index whose value was taken. */
    readonly index?: string,
  ) {
    super(message);
    this.name = 'StoreError';
  }
}

/**
 * `Unavailable` because the store did not answer in time (the deadline over the port,
 * store/deadline.ts, or a MongoDB operation's own bound, mongo/bounded.ts), not because it
 * refused the connection: the API says "too slow" rather than "unreachable".
 */
export class StoreTimeout extends StoreError {
  constructor(
    override readonly timeoutMs: number,
    message: string,
  ) {
    super('Unavailable', message);
    this.name = 'StoreTimeout';
  }
}

export const isStoreError = (e: unknown, code?: StoreErrorCode): e is StoreError =>
  e instanceof StoreError && (code === undefined || e.code === code);
