/**
 * The one place GraphQL errors are shaped (the HTTP mapping below both transports is errors/http.ts).
 *
 *  - ApiError (from the operations, the @auth directive, authentication) → its message with
 *    `extensions.code` = the ApiError code, plus `extensions.errors` (field errors) for INVALID.
 *    The @auth wrapper and the context factory convert with `toGraphQLError`, so client
 *    mistakes reach the response without being logged as server errors.
 *  - GraphQL's own errors (syntax, validation, variable coercion, limits) pass unchanged.
 *  - Anything else is masked by `maskError`: "Internal server error." with code INTERNAL,
 *    never a stack (graphql-yoga logs the original).
 */
import { GraphQLError, type GraphQLErrorExtensions } from 'graphql';
import { ApiError, type ErrorCode } from '../errors/index.js';
import { errorHeaders } from '../errors/http.js';

export const INTERNAL_MESSAGE = 'Internal server error.';

export function apiErrorExtensions(err: ApiError): GraphQLErrorExtensions {
  const extensions: GraphQLErrorExtensions = { code: err.code };
  if (err.errors?.length) extensions.errors = err.errors.map(({ field, message }) => ({ field, message }));
  return extensions;
}

/** A GraphQL error with a gateway code, for errors raised by the GraphQL layer itself. */
export function graphQLError(message: string, code: ErrorCode, extra: GraphQLErrorExtensions = {}): GraphQLError {
  return new GraphQLError(message, { extensions: { code, ...extra } });
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
