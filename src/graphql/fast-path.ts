/**
 * The fast execution path for the common request: `POST /graphql` with a JSON body holding a
 * query or mutation that parses and validates. It skips the Fetch-API conversion and plugin
 * chain of graphql-yoga and runs graphql-js directly over a per-schema document cache.
 *
 * It serves only what it can serve exactly like yoga does (same limits, same error masking,
 * same status 200 for executed operations). Cached operations are compiled with graphql-jit
 * once per (schema, document, operation name), except those graphql-jit cannot handle (see
 * `jitSafe`), which run through graphql-js `execute`. Anything else — other methods or media types,
 * malformed bodies, syntax or validation errors, subscriptions, failed authentication,
 * variable coercion errors — is handed to yoga with the already-read body, so behaviour and
 * the graphql-http audits are unchanged.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  execute,
  getOperationAST,
  GraphQLError,
  isLeafType,
  Kind,
  type TypeNode,
  parse,
  specifiedRules,
  validate,
  type DocumentNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type ValidationRule,
} from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import type { Authorizer, Caller } from '../security/authorizer.js';
import type { GraphQLContext } from './context.js';
import { INTERNAL_MESSAGE, maskError } from './errors.js';
import { maxAliasesRule, maxDepthRule, type Limits } from './limits.js';
import { readBody as readLimitedBody } from '../http/read-body.js';
import { textDepth } from '../json/depth.js';
import { LIMITS } from '../limits.js';
import { traceOperation } from '../ops/tracing.js';

/** Bodies above this get 413 (yoga itself sets no limit). */
export const MAX_BODY_BYTES = LIMITS.bodyBytes;
const MAX_CACHED_DOCUMENTS = 1000;

interface Prepared {
  document: DocumentNode;
  operations: Map<string | undefined, OperationDefinitionNode | null>;
  /** Compiled operations by name; null when graphql-jit could not compile one. */
  compiled: Map<string | undefined, CompiledQuery | null>;
}

/**
 * graphql-jit expands recursive types eagerly and exhausts memory on recursive input types
 * (a Person input holding a Person) and on introspection; those stay on graphql-js.
 */
function jitSafe(schema: GraphQLSchema, operation: OperationDefinitionNode, query: string): boolean {
  if (/__schema|__type\b/.test(query)) return false;
  for (const v of operation.variableDefinitions ?? []) {
    let t: TypeNode = v.type;
    while (t.kind !== Kind.NAMED_TYPE) t = t.type;
    const named = schema.getType(t.name.value);
    if (!named || !isLeafType(named)) return false;
  }
  return true;
}

export interface FastPathDeps {
  schema(): GraphQLSchema;
  limits: Limits;
  /** The request's caller (authenticated once per request, shared with yoga if it takes over). */
  callerOf(req: IncomingMessage): Promise<Caller>;
  authorizer: Authorizer;
  logError(err: unknown): void;
  /** Completes the context of a request (the observer's hooks). */
  context?(ctx: GraphQLContext, req: IncomingMessage): GraphQLContext;
  /** Told of each operation executed here: "OK" or the first error's code. */
  onOperation?(type: string, name: string | undefined, code: string): void;
}

/** The response media type the fast path would answer with, or undefined to leave it to yoga. */
function responseType(accept: string | undefined): string | undefined {
  if (!accept) return 'application/json';
  for (const part of accept.split(',')) {
    const type = part.split(';')[0]!.trim().toLowerCase();
    if (type === 'application/graphql-response+json') return 'application/graphql-response+json; charset=utf-8';
    if (type === 'application/json' || type === '*/*' || type === 'application/*') return 'application/json; charset=utf-8';
    if (type === 'text/event-stream' || type === 'multipart/mixed') return undefined;
  }
  return undefined;
}

const isJsonBody = (req: IncomingMessage) => {
  const ct = (req.headers['content-type'] ?? '').toLowerCase().replace(/\s+/g, '');
  return ct === 'application/json' || ct === 'application/json;charset=utf-8';
};

/** The body, or undefined when it is over the limit (read and discarded: see http/read-body.ts). */
async function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  try {
    return await readLimitedBody(req, MAX_BODY_BYTES);
  } catch (e) {
    if ((e as { status?: number }).status === 413) return undefined;
    throw e;
  }
}

const badRequest = (res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}) => {
  const text = JSON.stringify({ errors: [{ message, extensions: { code: 'BAD_REQUEST' } }] });
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
  res.end(text);
};

/** Hands a request whose body was already read to yoga, and copies its answer back. */
export async function replay(
  fetchFn: (url: string, init: RequestInit) => Response | Promise<Response>,
  req: IncomingMessage,
  res: ServerResponse,
  body: Buffer,
): Promise<void> {
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) {
    if (v === undefined) continue;
    for (const one of Array.isArray(v) ? v : [v]) headers.append(k, one);
  }
  const response = await fetchFn(`http://${req.headers.host ?? 'localhost'}${req.url ?? '/graphql'}`, {
    method: req.method,
    headers,
    body: new Uint8Array(body),
  });
  const outHeaders: Record<string, string> = {};
  response.headers.forEach((v, k) => {
    if (k !== 'content-length' && k !== 'transfer-encoding') outHeaders[k] = v;
  });
  if (STREAMING.test(response.headers.get('content-type') ?? '') && response.body) {
    // A subscription (text/event-stream, multipart/mixed): headers at once, then each part as
    // it comes; the client leaving cancels the stream (and so the subscription).
    res.writeHead(response.status, outHeaders);
    res.flushHeaders();
    const reader = response.body.getReader();
    res.once('close', () => void reader.cancel().catch(() => undefined));
    for (;;) {
      const chunk = await reader.read().catch(() => ({ done: true, value: undefined }) as const);
      if (chunk.done || res.destroyed) break;
      res.write(chunk.value);
    }
    res.end();
    return;
  }
  const out = Buffer.from(await response.arrayBuffer());
  outHeaders['content-length'] = String(out.length);
  res.writeHead(response.status, outHeaders);
  res.end(out);
}

const STREAMING = /^\s*(text\/event-stream|multipart\/mixed)/i;

export type FastPathOutcome =
  | { handled: true }
  /** Not read: yoga handles the request as it is. */
  | { handled: false; body?: undefined }
  /** Read: yoga must be given this body (see `replay`). */
  | { handled: false; body: Buffer };

export interface FastPath {
  /**
   * Serves the request, or returns the body it read so the caller can hand the request to
   * yoga (`undefined` body: nothing was read).
   */
  serve(req: IncomingMessage, res: ServerResponse): Promise<FastPathOutcome>;
}

export function createFastPath(deps: FastPathDeps): FastPath {
  const rules: ValidationRule[] = [...specifiedRules, maxDepthRule(deps.limits.maxDepth), maxAliasesRule(deps.limits.maxAliases)];
  const caches = new WeakMap<GraphQLSchema, Map<string, Prepared | null>>();

  /** Parses and validates once per (schema, query); null = not for the fast path. */
  function prepare(schema: GraphQLSchema, query: string): Prepared | null {
    let cache = caches.get(schema);
    if (!cache) caches.set(schema, (cache = new Map()));
    const hit = cache.get(query);
    if (hit !== undefined) return hit;
    let prepared: Prepared | null = null;
    try {
      const document = parse(query, { maxTokens: deps.limits.maxTokens });
      if (validate(schema, document, rules).length === 0) prepared = { document, operations: new Map(), compiled: new Map() };
    } catch {
      prepared = null; // syntax errors and limits: yoga reports them
    }
    if (cache.size >= MAX_CACHED_DOCUMENTS) cache.delete(cache.keys().next().value!);
    cache.set(query, prepared);
    return prepared;
  }

  function operationOf(p: Prepared, name: string | undefined): OperationDefinitionNode | null {
    const known = p.operations.get(name);
    if (known !== undefined) return known;
    const op = getOperationAST(p.document, name) ?? null;
    p.operations.set(name, op);
    return op;
  }

  return {
    async serve(req, res) {
      if (req.method !== 'POST') return { handled: false };
      // Every POST body is read here, within the size limit, also when yoga serves the request.
      const body = await readBody(req);
      if (!body) {
        badRequest(res, 413, `The request body exceeds ${MAX_BODY_BYTES} bytes.`, { connection: 'close' });
        return { handled: true };
      }
      if (!isJsonBody(req) || (req.url ?? '').includes('?')) return { handled: false, body };
      const type = responseType(req.headers.accept);
      if (!type) return { handled: false, body };
      const bodyText = body.toString('utf8');
      if (textDepth(bodyText, LIMITS.jsonDepth) > LIMITS.jsonDepth) {
        // Variables nested this deep would exhaust the stack of input coercion and of the patch code.
        badRequest(res, 400, `The request body is nested more than ${LIMITS.jsonDepth} levels deep (limit: JSON nesting depth ${LIMITS.jsonDepth}).`);
        return { handled: true };
      }
      let params: { query?: unknown; variables?: unknown; operationName?: unknown; extensions?: unknown };
      try {
        params = JSON.parse(bodyText);
      } catch {
        return { handled: false, body };
      }
      if (typeof params !== 'object' || params === null || Array.isArray(params) || typeof params.query !== 'string') {
        return { handled: false, body };
      }
      const { query, variables, operationName } = params;
      if (variables !== undefined && variables !== null && (typeof variables !== 'object' || Array.isArray(variables))) {
        return { handled: false, body };
      }
      if (operationName !== undefined && operationName !== null && typeof operationName !== 'string') {
        return { handled: false, body };
      }
      if (params.extensions !== undefined && params.extensions !== null && typeof params.extensions !== 'object') {
        return { handled: false, body };
      }
      const schema = deps.schema();
      const prepared = prepare(schema, query);
      if (!prepared) return { handled: false, body };
      const operation = operationOf(prepared, operationName ?? undefined);
      if (!operation || operation.operation === 'subscription') return { handled: false, body };
      let caller: Caller;
      try {
        caller = await deps.callerOf(req);
      } catch {
        return { handled: false, body }; // yoga answers 401 with its headers
      }
      const plain: GraphQLContext = { caller, authorizer: deps.authorizer };
      const contextValue = deps.context ? deps.context(plain, req) : plain;
      const name = operationName ?? undefined;
      let compiled = prepared.compiled.get(name);
      if (compiled === undefined) {
        const c = jitSafe(schema, operation, query) ? compileQuery(schema, prepared.document, name) : null;
        compiled = c && isCompiledQuery(c) ? c : null;
        prepared.compiled.set(name, compiled);
      }
      const result = await traceOperation(operation.operation, name ?? operation.name?.value, async () =>
        compiled
          ? await compiled.query(undefined, contextValue, (variables ?? {}) as Record<string, unknown>)
          : await execute({
              schema,
              document: prepared.document,
              contextValue,
              variableValues: variables as Record<string, unknown> | undefined,
              operationName: name,
            }),
      );
      if (!('data' in result) || result.data === undefined) {
        // Variable coercion failed before execution: nothing ran, yoga reports it with its status.
        return { handled: false, body };
      }
      const payload: Record<string, unknown> = { data: result.data };
      let code = 'OK';
      if (result.errors?.length) {
        payload.errors = result.errors.map((e) => {
          const masked = maskError(e) as GraphQLError;
          if (masked.message === INTERNAL_MESSAGE) deps.logError(e.originalError ?? e);
          if (code === 'OK') code = typeof masked.extensions?.code === 'string' ? masked.extensions.code : 'INTERNAL';
          return masked.toJSON();
        });
      }
      deps.onOperation?.(operation.operation, operation.name?.value ?? name, code);
      const text = JSON.stringify(payload);
      res.writeHead(200, { 'content-type': type, 'content-length': Buffer.byteLength(text) });
      res.end(text);
      return { handled: true };
    },
  };
}
