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

export const isStoreError = (e: unknown, code?: StoreErrorCode): e is StoreError =>
  e instanceof StoreError && (code === undefined || e.code === code);
