/**
 * Composition root: configuration → store adapter → security generation → registry (platform
 * kinds with their hooks, then plugins) → authenticator/authorizer → HTTP pipeline mounting
 * REST, GraphQL and watch. The only module that knows which store adapter runs.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { CommandStartedEvent } from 'mongodb';
import { pino, type Logger } from 'pino';
import { createAuthenticator } from './authentication/authenticate.js';
import { SecurityGeneration } from './authentication/generation.js';
import { LoginLimiter, type LoginLimits, DEFAULT_LOGIN_LIMITS } from './authentication/login-limiter.js';
import { TokenStore } from './authentication/tokens.js';
import { replaceHash, userHooks } from './authentication/user-hooks.js';
import type { ScryptCost } from './authentication/password.js';
import type { ApiObject } from './store/object.js';
import { ensureAdmin, ensureBuiltinRoles } from './bootstrap/roles-and-first-admin.js';
import { storeAddress, type Config } from './config.js';
import { Unavailable } from './errors/index.js';
import { sendJson, sendProblem } from './errors/http.js';
import { createGraphQL } from './graphql/index.js';
import { loadAllowList } from './graphql/persisted.js';
import { createPipeline } from './pipeline/pipeline.js';
import { platformRoutes } from './pipeline/platform-routes.js';
import { createRouteTable, type CustomRoutes } from './pipeline/routes.js';
import { PluginRouteTable } from './plugins/custom-routes.js';
import { PluginController } from './plugins/lifecycle.js';
import { serveCustomRoute } from './plugins/serve-route.js';
import { createModelClient, privilegedContext } from './plugins/model-client.js';
import { bindingAdmission, roleAdmission, userAdmission } from './authorization/admission.js';
import type { Authorizer } from './identity/authorizer.js';
import { RbacAuthorizer } from './authorization/rbac-authorizer.js';
import { PLATFORM_MODELS, ROLE, ROLE_BINDING, USER } from './registry/platform.js';
import type { KindHooks } from './registry/hooks.js';
import { Registry } from './registry/registry.js';
import { createEmbeddedStore } from './store/embedded/index.js';
import { createMongoStore } from './store/mongo/index.js';
import type { Store } from './store/types.js';
import { withDeadline } from './store/deadline.js';
import { startTracing, tracedStore } from './observability/tracing.js';
import { guardServer } from './transport/guard.js';
import { refuseBadUpgrade } from './transport/upgrade.js';
import { browserPolicy } from './transport/browser.js';
import { consoleServer } from './console/serve.js';
import { resolveLimits, type GatewayLimits } from './limits.js';
import { healthEndpoint, probeCheck, type PublicEndpoint } from './observability/health.js';
import { openAuditLog, type AuditLog } from './observability/audit.js';
import { GatewayMetrics, metricsRoute } from './observability/metrics.js';
import { RequestObserver } from './observability/observer.js';
import { parseTarget } from './requestinfo/requestinfo.js';
import { prettyDestination } from './observability/pretty.js';
import { withStoreMetrics } from './observability/store-metrics.js';
import { WatchHub } from './watch/hub.js';
import { ApiDocs } from './apidocs/service.js';
import { apiDocsRoutes } from './apidocs/routes.js';
import { publicPages } from './apidocs/public.js';

export interface Gateway {
  url: string;
  registry: Registry;
  store: Store;
  /** The plugin lifecycle controller (docs/API.md §7). */
  plugins: PluginController;
  /** This gateway's watch state: settings, quota, open streams (watch/hub.ts). */
  watches: WatchHub;
  adminUsername: string;
  /**
   * The administrator's generated password while it has not been changed (this start's or an
   * earlier one's), else undefined. `GatewayOptions.onAdminPassword` hears of it first.
   */
  adminPassword?: string;
  /** True when the admin password was generated at this start. */
  generatedPassword: boolean;
  /**
   * Graceful shutdown (SIGTERM, SIGINT; docs/API.md §10): stops accepting connections, ends open
   * watches (REST WebSocket close 1001, ndjson streams end, graphql-ws subscriptions complete),
   * lets requests in flight finish for up to `graceMs`, then closes like `close()`.
   */
  shutdown(graceMs?: number): Promise<void>;
  /** Closes at once: open connections are cut, then plugins stop and the store closes. */
  close(): Promise<void>;
}

export interface GatewayOptions {
  logger?: Logger;
  /**
   * Replaces the RBAC authorizer. Tests of layers above authorization use it; it is the one
   * opt-out besides authorization/system.ts `systemContext`.
   */
  authorizer?: Authorizer;
  /** The custom-route slot (plugin routes), consulted after authentication and authorization. */
  customRoutes?: CustomRoutes;
  /** Failed-login limits (docs/API.md §2 values by default). */
  loginLimits?: Partial<LoginLimits>;
  /** How often another gateway's RBAC changes are looked for (ms). */
  securityPollMs?: number;
  /**
   * The scrypt cost of new password hashes. Tests only (test/helpers/gateway.ts lowers it so that
   * suites creating many users stay fast); a gateway always runs the default, OWASP's (authentication/password.ts).
   */
  passwordCost?: ScryptCost;
  /**
   * Overrides rows of src/limits.ts (after the environment's): every row is enforced with the
   * value resolved here, which the registry hands to the operations and the doors (tests use
   * short deadlines and small sizes).
   */
  limits?: Partial<GatewayLimits>;
  /** false: no Prometheus metrics are kept and /metrics is not served (benchmarks compare). */
  metrics?: boolean;
  /** MongoDB store: called with every command the driver starts (tests count commands per request). */
  onMongoCommand?: (e: CommandStartedEvent) => void;
  /**
   * Called during the start as soon as a generated administrator password is valid, before
   * anything else can fail, and at every later start until it is changed (the CLI prints it).
   */
  onAdminPassword?: (username: string, password: string, generatedNow: boolean) => void;
}

/** `storeTimeoutMs`: the store deadline; MongoDB operations are also cancelled after it. */
export function openStore(config: Config, storeTimeoutMs?: number, onCommand?: (e: CommandStartedEvent) => void): Promise<Store> {
  return config.mongodbUrl
    ? createMongoStore({ url: config.mongodbUrl, operationTimeoutMS: storeTimeoutMs, onCommand })
    : createEmbeddedStore({ dataDir: config.dataDir });
}

/** A start that failed for a reason the operator can act on; the message is one line naming the address. */
export class StartError extends Error {}

const firstLine = (e: unknown) => (e instanceof Error ? e.message : String(e)).split('\n')[0]!.slice(0, 300);

const LISTEN_ERRORS: Record<string, string> = {
  EADDRINUSE: 'the address is already in use',
  EACCES: 'permission denied',
  EADDRNOTAVAIL: 'the address is not available on this machine',
  ENOTFOUND: 'unknown host',
};

/** Opens the store and checks that it answers, so an unreachable MongoDB fails the start quickly. */
async function openCheckedStore(config: Config, storeTimeoutMs: number, onCommand?: (e: CommandStartedEvent) => void): Promise<Store> {
  let store: Store | undefined;
  try {
    store = await openStore(config, storeTimeoutMs, onCommand);
    await store.ping();
    return store;
  } catch (e) {
    await store?.close().catch(() => undefined);
    throw new StartError(
      config.mongodbUrl
        ? `MongoDB unreachable at ${storeAddress(config)}: ${firstLine(e).replace(/^MongoDB is unavailable: /, '')}`
        : `cannot open the embedded store in ${config.dataDir}: ${firstLine(e)}`,
    );
  }
}

const HEALTH_TIMEOUT_MS = 3000;
/** How long a graceful shutdown waits for requests in flight (docs/API.md §10). */
export const SHUTDOWN_GRACE_MS = 10_000;

export async function startGateway(config: Config, options: GatewayOptions = {}): Promise<Gateway> {
  // JSON lines, or readable lines when stdout is a terminal (docs/API.md §10 request log).
  const log = options.logger ?? pino({ level: config.logLevel }, process.stdout.isTTY ? prettyDestination(process.stdout) : undefined);

  // The GraphQL allow-list (docs/API.md §13) and the audit policy are read first: a bad one fails
  // the start before anything is opened.
  const allowList = config.graphqlOperations
    ? await loadAllowList(config.graphqlOperations).catch((e: Error) => {
        throw new StartError(e.message);
      })
    : undefined;
  const audit: AuditLog | undefined = config.auditLog
    ? openAuditLog({ path: config.auditLog, policyFile: config.auditPolicy, onError: (err) => log.error({ err: err.message }, 'audit log write failed') })
    : undefined;
  let registryRef: Registry | undefined;
  const limits = resolveLimits(process.env, options.limits);
  const watches = new WatchHub(limits);
  const metrics =
    options.metrics === false
      ? undefined
      : new GatewayMetrics(() =>
          (registryRef?.entries() ?? []).map((e) => ({
            group: e.model.group,
            version: e.model.version,
            resource: e.model.plural,
            count: watches.count(e.model.storage.key),
          })),
        );
  // Before anything traced is built: OTel is imported only when OTEL_EXPORTER_OTLP_ENDPOINT is set.
  const stopTracing = await startTracing(process.env, log);
  const deadlined = tracedStore(withDeadline(await openCheckedStore(config, limits.storeTimeoutMs, options.onMongoCommand), limits.storeTimeoutMs));
  const store = metrics ? withStoreMetrics(deadlined, (kind, op, s) => metrics.storeOperation(kind, op, s)) : deadlined;
  const generation = await SecurityGeneration.open(store, { log, pollMs: options.securityPollMs });
  const securityChanged = () => generation.bump();
  const registry = new Registry(store, limits);
  registryRef = registry;
  watches.follow(registry);
  const observer = new RequestObserver({ metrics, audit, log, known: (g, v, r) => registry.find(g, v, r) !== undefined });
  const platformStore = (plural: string) => {
    const entry = registry.find('', 'v1alpha1', plural);
    if (!entry) throw new Unavailable(`platform kind ${plural} is not registered`);
    return entry.store;
  };
  const rbac = new RbacAuthorizer({
    roles: () => platformStore('roles'),
    bindings: () => platformStore('rolebindings'),
    generation,
    pluginOf: (group, version, resource) => registry.find(group, version, resource)?.model.plugin,
  });
  const authorizer = options.authorizer ?? rbac;
  const tokens = await TokenStore.open(store, securityChanged);
  const authenticate = createAuthenticator({
    users: {
      get: (name) => platformStore('users').get(name),
      replaceHash: (name, from, to) => replaceHash(platformStore('users'), name, from, to),
    },
    tokens,
    generation,
    limiter: new LoginLimiter({ ...DEFAULT_LOGIN_LIMITS, ...options.loginLimits }),
    passwordCost: options.passwordCost,
  });

  const yogaLog = log.child({ component: 'graphql' });
  const text = (args: unknown[]) => args.map((a) => (a instanceof Error ? a.stack : typeof a === 'string' ? a : JSON.stringify(a))).join(' ');
  let pluginController: PluginController | undefined;
  const graphql = createGraphQL({
    registry,
    limits: { maxCost: limits.graphqlMaxCost },
    allowList,
    watches,
    observe: observer,
    authorizer,
    authenticate,
    describeCaller: (caller) => rbac.describe(caller),
    // Custom fields of started plugins; their resolvers get clients like route handlers do.
    extensions: () => pluginController?.graphqlExtensions() ?? [],
    // Both clients' reads count against the operation's response limit (operations/budget.ts).
    extensionContext: (plugin, ctx) => ({
      client: createModelClient(registry, plugin, { caller: ctx.caller, authorizer: ctx.authorizer, budget: ctx.budget }),
      privileged: createModelClient(registry, plugin, { ...privilegedContext(plugin), budget: ctx.budget }),
    }),
    logging: {
      debug: (...a: unknown[]) => yogaLog.debug(text(a)),
      info: (...a: unknown[]) => yogaLog.info(text(a)),
      warn: (...a: unknown[]) => yogaLog.warn(text(a)),
      error: (...a: unknown[]) => yogaLog.error(text(a)),
    },
  });

  // A user being deleted loses its tokens (they would not authenticate a new user of the name anyway).
  const userChanged = async (user: ApiObject) => {
    if (user.metadata.deletionTimestamp) await tokens.revokeAllOf(user.metadata.name);
    await securityChanged();
  };
  const hooks = new Map<unknown, KindHooks>([
    [ROLE, { admit: roleAdmission(rbac), changed: securityChanged }],
    [ROLE_BINDING, { admit: bindingAdmission(rbac), changed: securityChanged }],
    [USER, { ...userHooks(userChanged, options.passwordCost), admit: userAdmission(rbac, config.adminUsername) }],
  ]);
  for (const { decl, opts } of PLATFORM_MODELS) await registry.register(decl, { ...opts, hooks: hooks.get(decl) });
  await ensureBuiltinRoles(registry);
  const admin = await ensureAdmin(
    registry,
    { username: config.adminUsername, password: config.adminPassword, store, announce: options.onAdminPassword },
    log,
  );
  const pluginRoutes = new PluginRouteTable();
  const plugins = new PluginController({
    registry,
    routes: pluginRoutes,
    log,
    pluginsDir: config.pluginsDir,
    rbac,
    onGraphQLChange: () => graphql.invalidate(),
    checkGraphQL: (plugin, extension) => graphql.checkExtension({ plugin, extension }),
  });
  pluginController = plugins;
  await plugins.boot();

  async function health(_req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      await Promise.race([
        store.ping(),
        new Promise((_, reject) => setTimeout(() => reject(new Unavailable()), HEALTH_TIMEOUT_MS).unref()),
      ]);
      sendJson(res, 200, { status: 'ok', store: store.kind });
    } catch {
      sendProblem(res, new Unavailable(), '/healthz');
    }
  }

  // The custom-route slot: routes given by the embedder first, then those of started plugins.
  const customRoutes: CustomRoutes = {
    match(method, pathname) {
      const own = options.customRoutes?.match(method, pathname);
      if (own) return own;
      const m = pluginRoutes.match(method, pathname);
      if (!m) return undefined;
      return (req, res, rc) =>
        serveCustomRoute(req, res, { route: m, info: rc.info, caller: rc.caller, authorizer: rc.operations.authorizer, registry, log });
    },
  };
  const apiDocs = new ApiDocs({ registry, authorizer, routes: pluginRoutes });
  const docsRoute = apiDocsRoutes(apiDocs);
  const routes = createRouteTable({
    registry,
    customRoutes,
    platform: platformRoutes({
      consoleRoutes: () =>
        plugins.consoleRoutes().flatMap(({ plugin, routes: list }) =>
          list.flatMap((r) => {
            const entry = registry.entries().find((e) => e.model.plugin === plugin && e.model.plural === r.resource);
            if (!entry) return [];
            const { group, version, kind, schema } = entry.model;
            return [{ plugin, ...r, group, version, kind, schema }];
          }),
        ),
      tokens,
      limits,
      describe: (caller) => rbac.describe(caller),
      userExists: async (name) => !!(await platformStore('users').get(name)),
    }),
    nonResource: (method, info, target) => (metrics && target.pathname === '/metrics' ? metricsRoute(metrics) : docsRoute(method, info, target)),
  });
  const pages = publicPages();
  const pipeline = createPipeline({
    authenticate,
    authorizer,
    routes,
    registry,
    graphql,
    graphiqlPage: pages.graphiql,
    // The console's files are public (its sign-in page loads first); its API calls are not.
    publicFiles: consoleServer(),
    publicEndpoints: new Map<string, PublicEndpoint>([
      ['/healthz', health],
      ...pages.endpoints,
      ['/livez', healthEndpoint('/livez', [])],
      [
        '/readyz',
        healthEndpoint('/readyz', [
          probeCheck('store', () => store.ping(), HEALTH_TIMEOUT_MS, `the ${store.kind} store does not answer`),
          { name: 'plugins', run: async () => plugins.notStarted() },
        ]),
      ],
    ]),
    log,
    observer,
    watches,
  });

  const browser = browserPolicy(config.corsOrigins ?? []);
  const server = createServer({ maxHeaderSize: limits.headerBytes }, (req, res) => {
    // Answered preflights never reach the pipeline; they are observed all the same (one
    // request-log line and a request metric each).
    if (browser.apply(req, res)) return void observer.request(req, res, parseTarget(req.url));
    void pipeline.handle(req, res);
  });
  const guard = guardServer(server, limits);
  server.on('upgrade', (req, socket, head) => void (refuseBadUpgrade(req, socket, guard) || pipeline.upgrade(req, socket, head)));
  // Resolves once the server has stopped listening and its last connection has gone.
  let serverClosed: Promise<void> | undefined;
  const closeServer = () => (serverClosed ??= new Promise<void>((resolve) => server.close(() => resolve())));
  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      await plugins.close();
      generation.stop();
      pipeline.close();
      await graphql.close();
      server.closeAllConnections();
      await closeServer();
      await store.close();
      metrics?.close();
      audit?.close();
      await stopTracing();
    })());

  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.port, config.host, () => resolve());
    });
  } catch (e) {
    await close().catch(() => undefined);
    const code = (e as NodeJS.ErrnoException).code ?? '';
    const address = `${config.host.includes(':') ? `[${config.host}]` : config.host}:${config.port}`;
    throw new StartError(`cannot listen on ${address}: ${LISTEN_ERRORS[code] ?? firstLine(e)}${code ? ` (${code})` : ''}`);
  }
  const { port } = server.address() as AddressInfo;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  const url = `http://${host}:${port}`;
  log.info({ url, store: store.kind }, 'svc gateway listening');

  return {
    url,
    registry,
    store,
    plugins,
    watches,
    adminUsername: admin.username,
    adminPassword: admin.shownPassword,
    generatedPassword: admin.generatedNow,
    async shutdown(graceMs = SHUTDOWN_GRACE_MS) {
      if (closing) return closing;
      log.info({ graceMs }, 'svc gateway shutting down');
      // No new connections; every connection gone (the requests in flight answered) ends the wait.
      const drained = closeServer();
      pipeline.endWatches();
      await graphql.endSubscriptions();
      // Keep-alive connections go as soon as they are idle.
      server.closeIdleConnections();
      const idle = setInterval(() => server.closeIdleConnections(), 50);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([drained, new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)))]);
      clearInterval(idle);
      clearTimeout(timer);
      await close();
    },
    close,
  };
}
