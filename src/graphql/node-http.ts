/**
 * HTTP requests to `/graphql`, from node's req/res.
 *
 * The common request, `POST` with a JSON body asking for a JSON answer, is served through yoga's
 * envelop chain (`yoga.getEnveloped`, as graphql-ws does) without yoga's Fetch adapter (a
 * Request, Headers, AbortController and Response per request): the same plugins run (schema,
 * parser and validation cache, limits, graphql-jit, error masking, context, metrics, tracing)
 * and yoga's own `processRegularResult` builds the answer, so status codes and bodies are
 * yoga's. `runOperation` below mirrors yoga's request handling from the parameters on.
 *
 * A POST body must be `application/json` (415 otherwise, docs/API.md §2): an HTML form
 * (urlencoded, multipart, text/plain) posted from another origin is never executed, although
 * yoga would read it.
 *
 * Everything else goes to yoga's node handler: other methods; and, with the body already read,
 * JSON with another charset, query strings, Accept values without a JSON type, bodies that are not a
 * plain parameters object, and subscriptions (`replay`). A request is handed over only before
 * its context is built, so nothing is executed or counted twice.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { getOperationAST, type DocumentNode, type ExecutionArgs, type ExecutionResult, type GraphQLError } from 'graphql';
import { processRegularResult, type YogaServerInstance } from 'graphql-yoga';
import { PayloadTooLarge, UnsupportedMediaType } from '../errors/index.js';
import { readBody } from '../transport/read-body.js';
import type { GatewayLimits } from '../limits.js';
import { mediaType as bodyType } from '../transport/media-type.js';
import type { GraphQLContext } from './context.js';
import { bodyRefusal, maskError } from './errors.js';
import { bodyTooDeep } from './limits.js';
import type { PersistedOperations } from './persisted.js';

export type Yoga = YogaServerInstance<Record<string, unknown>, GraphQLContext>;
type Enveloped = ReturnType<Yoga['getEnveloped']>;

export interface Params {
  query: string;
  variables?: Record<string, unknown> | null;
  operationName?: string | null;
  extensions?: Record<string, unknown> | null;
}

const PARAM_NAMES = new Set(['query', 'variables', 'operationName', 'extensions']);
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The body as GraphQL parameters, or undefined for anything yoga should judge (and word). */
function paramsOf(text: string): Params | undefined {
  let p: unknown;
  try {
    p = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isRecord(p) || typeof p.query !== 'string') return undefined;
  for (const k in p) if (p[k] != null && !PARAM_NAMES.has(k)) return undefined;
  if (p.variables != null && !isRecord(p.variables)) return undefined;
  if (p.operationName != null && typeof p.operationName !== 'string') return undefined;
  if (p.extensions != null && !isRecord(p.extensions)) return undefined;
  return p as unknown as Params;
}

const isJsonBody = (req: IncomingMessage) => {
  const ct = (req.headers['content-type'] ?? '').toLowerCase().replace(/\s+/g, '');
  return ct === 'application/json' || ct === 'application/json;charset=utf-8';
};

/** The JSON types of yoga's regular result processor, in the order it tries them. */
const JSON_TYPES = ['application/graphql-response+json', 'application/json'];
/** Whether `offered` is matched by `asked` (which may hold wildcards). */
const matches = (offered: string, asked: string) => {
  const [o0, o1] = offered.split('/');
  const [a0, a1] = asked.split('/');
  return (a0 === '*' || a0 === o0) && (a1 === '*' || a1 === o1);
};

/**
 * The media type yoga answers a query or mutation with for this Accept header, or undefined
 * when it would not answer JSON. Yoga's choice: the first listed type (utf-8 only) that a JSON
 * type matches, and of the JSON types matching it the last (a full wildcard gives application/json).
 */
export function jsonMediaType(accept: string | undefined): string | undefined {
  const asked = (accept || '*/*').replace(/\s/g, '').toLowerCase().split(',');
  for (const one of asked) {
    const [type, ...params] = one.split(';');
    if ((params.find((p) => p.includes('charset=')) ?? 'charset=utf-8') !== 'charset=utf-8') continue;
    const matching = JSON_TYPES.filter((offered) => matches(offered, type!));
    if (matching.length) return matching[matching.length - 1];
  }
  return undefined;
}

/** Captures what `processRegularResult` answers, instead of building a Fetch Response. */
class Captured {
  constructor(
    readonly body: string,
    readonly init: { status: number; headers: Record<string, string> },
  ) {}
}
const CAPTURE = { Response: Captured } as unknown as Parameters<typeof processRegularResult>[1];

function send(res: ServerResponse, status: number, headers: Record<string, string>, body: string): void {
  res.writeHead(status, { ...headers, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

const STREAMING = /^\s*(text\/event-stream|multipart\/mixed)/i;

/** Hands a request whose body was already read to yoga, and copies its answer back. */
async function replay(yoga: Yoga, req: IncomingMessage, res: ServerResponse, body: Buffer): Promise<void> {
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) {
    if (v === undefined) continue;
    for (const one of Array.isArray(v) ? v : [v]) headers.append(k, one);
  }
  const url = `http://${req.headers.host ?? 'localhost'}${req.url ?? '/graphql'}`;
  const response = await yoga.fetch(url, { method: req.method, headers, body: new Uint8Array(body) }, { req, res });
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

/**
 * Parses (parse errors are thrown) and validates with an envelop of yoga's chain: the document,
 * or the validation errors. With `operationArgs`, shared by the POST door and graphql-ws.
 */
export function validDocument(enveloped: Enveloped, query: string): DocumentNode | readonly GraphQLError[] {
  const document = enveloped.parse(query);
  const errors = enveloped.validate(enveloped.schema, document);
  return errors.length > 0 ? errors : document;
}

/** The execution arguments of a valid document, with the context built by the envelop. */
export async function operationArgs(
  enveloped: Enveloped,
  document: DocumentNode,
  params: Pick<Params, 'variables' | 'operationName'>,
): Promise<ExecutionArgs> {
  return {
    schema: enveloped.schema,
    document,
    operationName: params.operationName,
    variableValues: params.variables,
    contextValue: await enveloped.contextFactory(),
  };
}

const isSubscription = (document: DocumentNode, name: string | null | undefined) =>
  getOperationAST(document, name)?.operation === 'subscription';

/**
 * One query or mutation through the envelop, as yoga runs it once it has the parameters: parse,
 * validate, context, execute; an error thrown on the way is masked like yoga does (and logged
 * when masking changed it). "subscription": the operation is one, nothing was run.
 */
async function runOperation(
  enveloped: Enveloped,
  params: Params,
  logError: (err: unknown) => void,
): Promise<ExecutionResult | 'subscription'> {
  try {
    const document = validDocument(enveloped, params.query);
    if (Array.isArray(document)) return { errors: document as readonly GraphQLError[] };
    if (isSubscription(document as DocumentNode, params.operationName)) return 'subscription';
    return (await enveloped.execute(await operationArgs(enveloped, document as DocumentNode, params))) as ExecutionResult;
  } catch (err) {
    const masked = maskError(err);
    if (masked !== err) logError(err);
    return { errors: [masked as GraphQLError] };
  }
}

/**
 * Serves the HTTP requests to `/graphql` of one yoga instance (see the header), within `limits`.
 * `persisted` turns a request's persisted-operation hash into its text (persisted.ts): asked here
 * for the requests served without yoga's request path, and by yoga's `onParams` for the others.
 */
export function httpHandler(
  yoga: Yoga,
  limits: Pick<GatewayLimits, 'bodyBytes' | 'discardBytes' | 'jsonDepth'>,
  persisted?: PersistedOperations,
): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  // Clients send the same Accept header with every request: the last answer is kept.
  let lastAccept = { header: undefined as string | undefined, type: jsonMediaType(undefined) };
  const mediaTypeOf = (header: string | undefined) => {
    if (lastAccept.header !== header) lastAccept = { header, type: jsonMediaType(header) };
    return lastAccept.type;
  };
  const logError = (e: unknown) => yoga.logger.error(e);
  // `yoga` is a Proxy (@whatwg-node/server) that wraps a function property in a new closure on
  // every read: the envelop factory is read once.
  const getEnveloped = yoga.getEnveloped;

  return async (req, res) => {
    if (req.method !== 'POST') return yoga.handle(req, res);
    let body: Buffer;
    try {
      body = await readBody(req, limits.bodyBytes, limits.discardBytes);
    } catch (e) {
      if ((e as { status?: number }).status !== 413) throw e;
      const refusal = bodyRefusal(new PayloadTooLarge(`The request body exceeds ${limits.bodyBytes} bytes.`));
      return send(res, refusal.status, refusal.headers, refusal.body);
    }
    const type = bodyType(req);
    if (type !== 'application/json') {
      const refusal = bodyRefusal(new UnsupportedMediaType(`Content-Type "${type || '(none)'}" is not supported; POST /graphql takes application/json`));
      return send(res, refusal.status, refusal.headers, refusal.body);
    }
    const mediaType = mediaTypeOf(req.headers.accept);
    if (!mediaType || !isJsonBody(req) || (req.url ?? '').includes('?')) return replay(yoga, req, res, body);
    const text = body.toString('utf8');
    const deep = bodyTooDeep(text, limits.jsonDepth);
    if (deep) {
      const refusal = bodyRefusal(deep);
      return send(res, refusal.status, refusal.headers, refusal.body);
    }
    let params = paramsOf(text);
    if (!params) return replay(yoga, req, res, body);
    if (persisted) {
      try {
        const query = persisted.resolve(params);
        if (query !== params.query) params = { ...params, query: query! };
      } catch (err) {
        const answer = processRegularResult({ errors: [err as GraphQLError] }, CAPTURE, mediaType) as unknown as Captured;
        return send(res, answer.init.status, answer.init.headers, answer.body);
      }
    }
    // yoga's plugins read `request.method` from the context (mutations over GET, the status of
    // parse errors); everything else of the request is read from `req`.
    const request = { method: 'POST' } as Request;
    // svcBodyDepthChecked: the body's depth is bounded, so are its variables (limits.ts).
    const enveloped = getEnveloped({ req, res, params, request, svcBodyDepthChecked: true });
    const result = await runOperation(enveloped, params, logError);
    if (result === 'subscription') return replay(yoga, req, res, body);
    const answer = processRegularResult(result, CAPTURE, mediaType) as unknown as Captured;
    send(res, answer.init.status, answer.init.headers, answer.body);
  };
}
