/**
 * API errors: one class per outcome, each carrying its HTTP status and GraphQL `extensions.code`.
 * The REST door maps them in errors/http.ts alone: problem responses, raw answers on a bare
 * socket or a refused upgrade, and the close codes of WebSocket watches. The GraphQL door maps
 * them in graphql/ (graphql/errors.ts).
 */
export type ErrorCode =
  | 'BAD_REQUEST'
  | 'UNAUTHENTICATED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'METHOD_NOT_ALLOWED'
  | 'CONFLICT'
  | 'GONE'
  | 'TOO_MANY_REQUESTS'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'INVALID'
  | 'UNAVAILABLE'
  | 'INTERNAL';

export interface FieldError {
  field: string;
  message: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    readonly title: string,
    detail: string,
    readonly errors?: FieldError[],
    /** Response headers every transport sends with this error (WWW-Authenticate, Retry-After). */
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(detail);
    this.name = 'ApiError';
  }
  get detail(): string {
    return this.message;
  }
}

export class BadRequest extends ApiError {
  constructor(detail: string) {
    super(400, 'BAD_REQUEST', 'Bad Request', detail);
  }
}
/** The challenge sent with every 401 (docs/API.md §2: Basic and Bearer personal access tokens). */
export const WWW_AUTHENTICATE = 'Basic realm="svc", Bearer realm="svc"';

export class Unauthenticated extends ApiError {
  constructor(detail = 'Invalid credentials.') {
    super(401, 'UNAUTHENTICATED', 'Unauthorized', detail, undefined, { 'www-authenticate': WWW_AUTHENTICATE });
  }
}
export class Forbidden extends ApiError {
  constructor(detail: string) {
    super(403, 'FORBIDDEN', 'Forbidden', detail);
  }
}
export class NotFound extends ApiError {
  constructor(detail: string) {
    super(404, 'NOT_FOUND', 'Not Found', detail);
  }
}
export class MethodNotAllowed extends ApiError {
  constructor(detail: string, readonly allow: string[] = []) {
    super(405, 'METHOD_NOT_ALLOWED', 'Method Not Allowed', detail);
  }
}
export class Conflict extends ApiError {
  constructor(detail: string) {
    super(409, 'CONFLICT', 'Conflict', detail);
  }
}
/** A compare-and-set lost against a concurrent write; unconditional writers may retry. */
export class VersionConflict extends Conflict {}
export class Gone extends ApiError {
  constructor(detail: string) {
    super(410, 'GONE', 'Gone', detail);
  }
}
export class TooManyRequests extends ApiError {
  constructor(detail: string, readonly retryAfterSeconds: number) {
    super(429, 'TOO_MANY_REQUESTS', 'Too Many Requests', detail, undefined, { 'retry-after': String(Math.max(1, retryAfterSeconds)) });
  }
}
export class PayloadTooLarge extends ApiError {
  constructor(detail: string) {
    super(413, 'BAD_REQUEST', 'Payload Too Large', detail);
  }
}
export class UnsupportedMediaType extends ApiError {
  constructor(detail: string) {
    super(415, 'UNSUPPORTED_MEDIA_TYPE', 'Unsupported Media Type', detail);
  }
}
export class Invalid extends ApiError {
  constructor(detail: string, errors: FieldError[]) {
    super(422, 'INVALID', 'Unprocessable Entity', detail, errors);
  }
}
export class Unavailable extends ApiError {
  constructor(detail = 'The store is unreachable.') {
    super(503, 'UNAVAILABLE', 'Service Unavailable', detail);
  }

  /**
   * The store failed: unreachable, or, given the deadline it missed (`timeoutMs` of a store
   * timeout), too slow (overloaded or stalled).
   */
  static fromStore(timeoutMs: number | undefined): Unavailable {
    return timeoutMs === undefined ? new Unavailable() : new Unavailable(`The store did not answer within ${timeoutMs} ms; try again later.`);
  }
}
export class Internal extends ApiError {
  constructor() {
    super(500, 'INTERNAL', 'Internal Server Error', 'Something went wrong.');
  }
}

/** The request (headers or body) did not arrive within its deadline. */
export class RequestTimeout extends ApiError {
  constructor(detail: string) {
    super(408, 'BAD_REQUEST', 'Request Timeout', detail);
  }
}

/** Turns anything thrown into an ApiError. Unknown errors become a bare 500 (never a stack). */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  return new Internal();
}

export const invalid = (field: string, message: string): Invalid =>
  new Invalid(`${field}: ${message}`, [{ field, message }]);
