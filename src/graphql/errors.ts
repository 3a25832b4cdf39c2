/**
 * GraphQL errors: every gateway error code a GraphQL client sees is chosen here, for HTTP
 * (yoga and the POST door alike) and graphql-ws. What maps a code to an HTTP status and its
 * headers is errors/http.ts (`errorHeaders`); this file only shapes GraphQL answers.
 *
 *  - ApiError (from the operations, the @auth directive, authentication) → its message with
 *    `extensions.code` = the ApiError code, plus `extensions.errors` (field errors) for INVALID.
 *    The @auth wrapper and the context factory convert with `toGraphQLError`, so client
 *    mistakes reach the response without being logged as server errors.
 *  - The limits (limits.ts) raise `BAD_REQUEST` through `graphQLError`.
 *  - GraphQL's own errors (syntax, validation, variable coercion) pass unchanged, with the
 *    codes graphql-yoga gives them (GRAPHQL_PARSE_FAILED, GRAPHQL_VALIDATION_FAILED, and
 *    BAD_REQUEST for malformed HTTP parameters).
 *  - Anything else is masked by `maskError`: "Internal server error." with code INTERNAL,
 *    never a stack (graphql-yoga logs the original).
 *  - A watch's ERROR event (subscriptions) → `watchEventError`.
 *  - A graphql-ws connection whose authentication fails → `connectionRefusal` (close code).
 *  - A POST body refused before GraphQL reads it (too large, nested too deep, not JSON) → `bodyRefusal`.
 *  - The outcome of an operation for metrics ("OK" or the first code) → `outcomeCode`.
 *  - graphql-ws messages carry no `extensions.http` (HTTP status and headers; yoga strips it
 *    from HTTP answers) → `withoutHttp`.
 */
import { GraphQLError, type GraphQLErrorExtensions, type GraphQLFormattedError } from 'graphql';
import { ApiError, toApiError, type ErrorCode } from '../errors/index.js';
import { closeCodeOf, errorHeaders } from '../errors/http.js';

export const INTERNAL_MESSAGE = 'Internal server error.';

export function apiErrorExtensions(err: ApiError): GraphQLErrorExtensions {
  const extensions: GraphQLErrorExtensions = { code: err.code };
  if (err.errors?.length) extensions.errors = err.errors.map(({ field, message }) => ({ field, message }));
  return extensions;
}

/**
 * A GraphQL error with a gateway code, for errors raised by the GraphQL layer itself (limits,
 * watch events); `nodes` locate it in the document.
 */
export function graphQLError(
  message: string,
  code: ErrorCode,
  extra: GraphQLErrorExtensions = {},
  nodes?: GraphQLError['nodes'],
): GraphQLError {
  return new GraphQLError(message, { nodes, extensions: { code, ...extra } });
}

/**
 * ApiError → GraphQL error; anything else is returned unchanged (for maskError). With
 * `request: true` (errors before execution) the HTTP status follows the error, e.g. 401.
 */
export function toGraphQLError(err: unknown, opts: { request?: boolean } = {}): unknown {
  if (!(err instanceof ApiError)) return err;
  const extensions = apiErrorExtensions(err);
  if (opts.request) {
    // graphql-yoga turns this into the response status/headers and strips it from the body.
    const headers = errorHeaders(err);
    extensions.http = { status: err.status, ...(Object.keys(headers).length ? { headers } : {}) };
  }
  return new GraphQLError(err.message, { extensions });
}

/** The innermost non-GraphQL error behind a (possibly wrapped) GraphQL error, if any. */
function rootCause(err: GraphQLError): unknown {
  let cur: unknown = err;
  while (cur instanceof GraphQLError && cur.originalError) cur = cur.originalError;
  return cur instanceof GraphQLError ? undefined : cur;
}

/**
 * graphql-yoga's `maskedErrors.maskError`, applied to HTTP and graphql-ws results alike (both
 * run through the same envelop chain). Returning the error unchanged means "not masked".
 */
export function maskError(error: unknown): Error {
  if (error instanceof GraphQLError) {
    const cause = rootCause(error);
    if (cause === undefined) return error;
    const located = { nodes: error.nodes, source: error.source, positions: error.positions, path: error.path };
    if (cause instanceof ApiError) {
      return new GraphQLError(cause.message, { ...located, extensions: apiErrorExtensions(cause) });
    }
    return new GraphQLError(INTERNAL_MESSAGE, { ...located, extensions: { code: 'INTERNAL' } });
  }
  const converted = toGraphQLError(error, { request: true });
  if (converted instanceof GraphQLError) return converted;
  return new GraphQLError(INTERNAL_MESSAGE, { extensions: { code: 'INTERNAL' } });
}

/** "OK", or the code of the first (masked) error: the `code` label of graphql_operations_total. */
export function outcomeCode(errors: readonly unknown[] | undefined): string {
  if (!errors?.length) return 'OK';
  const code = (maskError(errors[0]) as GraphQLError).extensions?.code;
  return typeof code === 'string' ? code : 'INTERNAL';
}

/** The watch's status codes (`errorEvent` in watch/encode.ts) → GraphQL codes. */
const WATCH_CODES: Record<number, ErrorCode> = {
  400: 'BAD_REQUEST',
  401: 'UNAUTHENTICATED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  410: 'GONE',
};

/**
 * The error a subscription ends with when its watch sends an ERROR event (`object` is the
 * event's `{ code, message }`); a code not listed (503: fell behind, the store failed) is
 * UNAVAILABLE.
 */
export function watchEventError(object: unknown): GraphQLError {
  const { code, message } = (object ?? {}) as { code?: number; message?: string };
  return graphQLError(message ?? 'The watch failed.', WATCH_CODES[code ?? 0] ?? 'UNAVAILABLE');
}

/**
 * How a graphql-ws connection is closed when its `connectionParams` fail authentication:
 * 4000 + the status for a client error (4401), 4500 otherwise: the close codes of errors/http.ts
 * `closeCodeOf`, as REST WebSocket watches use.
 */
export function connectionRefusal(err: unknown): { code: number; reason: string } {
  const known = err instanceof ApiError && err.status < 500;
  return known ? { code: closeCodeOf(err.status), reason: err.title } : { code: closeCodeOf(500), reason: 'Internal server error' };
}

/** A request body refused before GraphQL parses it: status, headers and the GraphQL JSON body. */
export interface BodyRefusal {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * A POST body the GraphQL door refuses before parsing it: too large (413, the connection
 * closes) or nested too deep (400); both `BAD_REQUEST`. `err` is the ApiError of the refusal.
 */
export function bodyRefusal(err: unknown): BodyRefusal {
  const api = toApiError(err);
  const body = JSON.stringify({ errors: [{ message: api.message, extensions: { code: 'BAD_REQUEST' } }] });
  const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8' };
  if (api.status === 413) headers.connection = 'close';
  return { status: api.status, headers, body };
}

/** The errors as graphql-ws sends them: formatted, without the HTTP-only `extensions.http`. */
export function withoutHttp(errors: readonly GraphQLError[]): GraphQLFormattedError[] {
  return errors.map((e) => {
    const formatted = e.toJSON();
    if (!formatted.extensions || !('http' in formatted.extensions)) return formatted;
    const { http: _http, ...extensions } = formatted.extensions;
    return { ...formatted, extensions };
  });
}
