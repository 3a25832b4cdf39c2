/**
 * The `/graphql` endpoint: graphql-yoga for GraphQL over HTTP (GET and POST, node-http.ts) and
 * graphql-ws on the same path for WebSocket (ws-door.ts), both through yoga's one envelop chain (schema,
 * parse and validation cache, limits, graphql-jit, error masking, context, metrics, tracing).
 * The schema is rebuilt when the registry changes and swapped atomically: each request takes
 * the schema current when it starts and keeps it to the end.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { getOperationAST, type DocumentNode, type ExecutionArgs, type GraphQLSchema } from 'graphql';
import { createYoga, type Plugin, type YogaLogger } from 'graphql-yoga';
import { tracedGraphQL } from '../observability/tracing.js';
import type { Authenticate } from '../authentication/authenticate.js';
import type { ModelEntry } from '../operations/index.js';
import type { Authorizer, Caller } from '../identity/authorizer.js';
import type { Model } from '../registry/model.js';
import { buildGatewaySchema, checkNames, type BuildOptions, type SchemaExtension } from './build-schema.js';
import { graphQLContext, type GraphQLContext } from './context.js';
import { maskError, outcomeCode, toGraphQLError } from './errors.js';
import { DEFAULT_LIMITS, useLimits, type Limits } from './limits.js';
import { useJit } from './jit.js';
import { useIntrospectionRule } from './introspection.js';
import { useDocumentCache } from './document-cache.js';
import { checkRelations } from './relations.js';
import { useCostLimit } from './cost.js';
import { PersistedOperations, usePersistedOperations } from './persisted.js';
import { httpHandler } from './node-http.js';
import { graphqlWsDoor } from './ws-door.js';
import type { FieldOutcome } from '../observability/observer.js';
import type { WatchHub } from '../watch/hub.js';
import type { GatewayLimits } from '../limits.js';
import { ResponseBudget } from '../operations/budget.js';

const REBUILD_DELAY_MS = 20;

/** What the GraphQL layer needs from the registry (registry/registry.ts satisfies it). */
export interface RegistryView {
  entries(): ModelEntry[];
  onChange(listener: () => void): () => void;
  /** The gateway's limits: body size, JSON depth and WebSocket message size are enforced here. */
  readonly limits: Readonly<GatewayLimits>;
  /** When present, `checkNames` is installed so clashing models are refused at registration. */
  addCheck?(check: (models: Model[], added: Model[]) => void): void;
}

export interface GraphQLOptions extends BuildOptions {
  registry: RegistryView;
  authorizer: Authorizer;
  /** Credentials → caller; throws Unauthenticated on wrong credentials, anonymous without any. */
  authenticate: Authenticate;
  limits?: Partial<Limits>;
  /** graphql-yoga logging (default: yoga's console logger). */
  logging?: boolean | YogaLogger;
  /** Serve GraphiQL on GET /graphql with Accept: text/html (default true). */
  graphiql?: boolean;
  /** Told of callers, operations and @auth-checked fields (metrics and audit: observability/observer.ts). */
  observe?: GraphQLObserver;
  /** The gateway's watch state: subscriptions and the graphql-ws send guard use it. */
  watches?: WatchHub;
  /** SVC_GRAPHQL_OPERATIONS: when given, only these operations (hash → document) run (persisted.ts). */
  allowList?: Record<string, string>;
}

export interface GraphQLObserver {
  /** The caller of an HTTP request. */
  identify(req: IncomingMessage, caller: Caller): void;
  /** An operation ended: `code` is "OK" or the first error's `extensions.code`. */
  graphqlOperation(type: string, name: string | undefined, code: string): void;
  /** A field checked by @auth ended. `req`: the HTTP request, or the WebSocket's upgrade request. */
  graphqlField(req: IncomingMessage | undefined, caller: Caller, f: FieldOutcome): void;
}

/** Counts each operation: those refused by parsing or validation, executed ones and subscriptions. */
const useOperationCount = (observe: GraphQLObserver): Plugin => {
  /** Type and name of the executed operation, kept per (document, operation name). */
  const described = new WeakMap<DocumentNode, Map<string | null | undefined, { type: string; name: string | undefined }>>();
  const typeOf = (args: ExecutionArgs) => {
    let byName = described.get(args.document);
    if (!byName) described.set(args.document, (byName = new Map()));
    let d = byName.get(args.operationName);
    if (!d) {
      const op = getOperationAST(args.document, args.operationName);
      d = { type: op?.operation ?? 'unknown', name: op?.name?.value ?? args.operationName ?? undefined };
      byName.set(args.operationName, d);
    }
    return d;
  };
  return {
    // Documents that do not parse or validate never execute: counted here.
    onParse() {
      return ({ result }) => {
        if (result instanceof Error) observe.graphqlOperation('unknown', undefined, 'GRAPHQL_PARSE_FAILED');
      };
    },
    onValidate({ params }) {
      return ({ valid }) => {
        if (valid) return;
        const op = getOperationAST(params.documentAST);
        observe.graphqlOperation(op?.operation ?? 'unknown', op?.name?.value, 'GRAPHQL_VALIDATION_FAILED');
      };
    },
    onExecute({ args }) {
      return {
        onExecuteDone({ result }) {
          const { type, name } = typeOf(args);
          const errors = Symbol.asyncIterator in result ? undefined : result.errors;
          observe.graphqlOperation(type, name, outcomeCode(errors));
        },
      };
    },
    onSubscribe({ args }) {
      return {
        onSubscribeResult({ result }) {
          const { type, name } = typeOf(args);
          const errors = Symbol.asyncIterator in result ? undefined : result.errors;
          observe.graphqlOperation(type, name, outcomeCode(errors));
        },
        onSubscribeError({ error }) {
          const { type, name } = typeOf(args);
          observe.graphqlOperation(type, name, outcomeCode([error]));
        },
      };
    },
  };
};

export interface GraphQLEndpoint {
  handle(req: IncomingMessage, res: ServerResponse): Promise<void>;
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
  /** The schema requests are served with now. */
  schema(): GraphQLSchema;
  /** Rebuilds the schema soon (the set of plugin GraphQL extensions changed). */
  invalidate(): void;
  /** Throws when the schema could not be built with `extension` added (a plugin's custom fields). */
  checkExtension(extension: SchemaExtension): void;
  /**
   * Shutdown, first step: every graphql-ws subscription completes (the client gets `complete`),
   * then its socket closes with 1001 "server shutting down".
   */
  endSubscriptions(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Holds the current schema. A registry change marks it stale; it is rebuilt by the next
 * request, or shortly after the change when no request comes first, so a burst of changes
 * (a plugin registering several models) costs one rebuild.
 */
class SchemaHolder {
  private schema: GraphQLSchema | undefined;
  private dirty = true;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly build: () => GraphQLSchema,
    private readonly onError: (err: unknown) => void,
  ) {}

  invalidate(): void {
    this.dirty = true;
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      try {
        this.current();
      } catch {
        // reported by current()
      }
    }, REBUILD_DELAY_MS).unref();
  }

  current(): GraphQLSchema {
    if (this.dirty) {
      this.dirty = false;
      try {
        this.schema = this.build();
      } catch (err) {
        // Keep serving the previous schema; without one there is nothing to serve.
        this.onError(err);
        if (!this.schema) {
          this.dirty = true;
          throw err;
        }
      }
    }
    return this.schema!;
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}

/** Sets the current schema on every envelop (HTTP request or WebSocket operation). */
const useCurrentSchema = (holder: SchemaHolder): Plugin => ({
  onPluginInit({ setSchema }) {
    setSchema(holder.current());
  },
  onEnveloped({ setSchema }) {
    setSchema(holder.current());
  },
});

export function createGraphQL(options: GraphQLOptions): GraphQLEndpoint {
  const { registry, authorizer, authenticate, watches } = options;
  const limits: Limits = {
    ...DEFAULT_LIMITS,
    jsonDepth: registry.limits.jsonDepth,
    maxCost: registry.limits.graphqlMaxCost,
    ...options.limits,
  };
  registry.addCheck?.(checkNames);
  registry.addCheck?.(checkRelations);

  let logError: (err: unknown) => void = (err) => console.error(err);
  const observe = options.observe;
  /** The context of a request, with its observer when there is one. */
  /** Each operation's response limit (operations/budget.ts), from the gateway's limits. */
  const budget = () => new ResponseBudget(registry.limits.responseBytes, registry.limits.objectBytes);
  const contextOf = (caller: Caller, req: IncomingMessage | undefined, http: boolean): GraphQLContext => {
    if (!observe) return graphQLContext(caller, authorizer, watches, undefined, budget());
    if (req && http) observe.identify(req, caller);
    return graphQLContext(caller, authorizer, watches, (f) => observe.graphqlField(req, caller, f), budget());
  };

  const buildOptions = {
    describeCaller: options.describeCaller,
    extensions: options.extensions,
    extensionContext: options.extensionContext,
  };
  const holder = new SchemaHolder(
    () => buildGatewaySchema(registry.entries(), buildOptions),
    (err) => logError(err),
  );
  const unsubscribe = registry.onChange(() => holder.invalidate());
  const persisted = new PersistedOperations(options.allowList);

  const yoga = createYoga<Record<string, unknown>, GraphQLContext>({
    graphqlEndpoint: '/graphql',
    landingPage: false,
    graphiql: options.graphiql ?? true,
    cors: false,
    logging: options.logging ?? true,
    maskedErrors: { maskError: (error) => maskError(error), isDev: false },
    // Our own cache (document-cache.ts), last of our plugins: where yoga puts its own.
    parserAndValidationCache: false,
    plugins: [
      usePersistedOperations(persisted),
      useCurrentSchema(holder),
      useLimits(limits),
      useCostLimit(limits.maxCost),
      useIntrospectionRule(),
      ...(observe ? [useOperationCount(observe)] : []),
      useJit(),
      ...tracedGraphQL(),
      useDocumentCache(),
    ],
    context: async (initial): Promise<GraphQLContext> => {
      // WebSocket operations arrive with the caller of their socket (ws-door.ts); an HTTP
      // request is authenticated here, from node's request or from yoga's Fetch request.
      const known = (initial as { caller?: Caller }).caller;
      const req = (initial as { req?: IncomingMessage }).req;
      if (known) return contextOf(known, req, false);
      try {
        const header = req ? req.headers.authorization : (initial.request.headers.get('authorization') ?? undefined);
        return contextOf(await authenticate(header, req && { address: req.socket.remoteAddress }), req, true);
      } catch (err) {
        throw toGraphQLError(err, { request: true });
      }
    },
  });
  logError = (err) => yoga.logger.error(err);
  const ws = graphqlWsDoor({ yoga, authenticate, persisted, maxPayload: registry.limits.wsMessageBytes, watches });

  return {
    handle: httpHandler(yoga, { ...registry.limits, jsonDepth: limits.jsonDepth }, persisted),
    handleUpgrade: ws.handleUpgrade,
    schema: () => holder.current(),
    invalidate: () => holder.invalidate(),
    checkExtension(extension) {
      const current = buildOptions.extensions?.() ?? [];
      buildGatewaySchema(registry.entries(), {
        ...buildOptions,
        extensions: () => [...current.filter((e) => e.plugin !== extension.plugin), extension],
      });
    },
    endSubscriptions: ws.endSubscriptions,
    async close() {
      unsubscribe();
      holder.stop();
      await ws.close();
      await yoga.dispose();
    },
  };
}
