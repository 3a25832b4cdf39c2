/**
 * The one place GraphQL errors are shaped (the REST counterpart is rest/problem.ts).
 *
 *  - ApiError (from the operations, the @auth directive, authentication) → its message with
 *    `extensions.code` = the ApiError code, plus `extensions.errors` (field errors) for INVALID.
 *  - GraphQL's own errors (syntax, validation, variable coercion, limits) pass unchanged.
 *  - Anything else is masked: "Internal server error." with code INTERNAL, never a stack.
 *
 * Errors raised before execution (authentication in the context factory) also carry
 * `extensions.http.status` so the HTTP response gets that status (401); graphql-yoga strips
 * `http` from the body.
 */
import { GraphQLError, type GraphQLErrorExtensions } from 'graphql';
import { ApiError, type ErrorCode } from '../errors/index.js';

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

/** The innermost non-GraphQL error behind a (possibly wrapped) GraphQL error, if any. */
function rootCause(err: GraphQLError): unknown {
  let cur: unknown = err;
  while (cur instanceof GraphQLError && cur.originalError) cur = cur.originalError;
  return cur instanceof GraphQLError ? undefined : cur;
}

/**
 * graphql-yoga's `maskedErrors.maskError` (also applied to graphql-ws results, which run
 * through the same envelop chain).
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
  if (error instanceof ApiError) {
    // Thrown outside execution (context building): let the HTTP status follow.
    const extensions = apiErrorExtensions(error);
    extensions.http = {
      status: error.status,
      ...(error.status === 401 ? { headers: { 'WWW-Authenticate': 'Basic realm="svc", Bearer' } } : {}),
    };
    return new GraphQLError(error.message, { extensions });
  }
  return new GraphQLError(INTERNAL_MESSAGE, { extensions: { code: 'INTERNAL' } });
}
