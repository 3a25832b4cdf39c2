/**
 * The limits on what one request or connection of a client controls (sizes, counts, deadlines),
 * in one table (README "Limits" documents the same rows). LIMITS holds the defaults; a gateway
 * enforces its own resolved copy (`resolveLimits` in server.ts: defaults, environment, then
 * GatewayOptions.limits), handed down by its registry (Registry.limits, ModelEntry.limits) to the
 * operations, the REST and GraphQL doors, and by server.ts to the connection guard and watch hub.
 * Limits of other kinds stay beside the code that applies them: GraphQL
 * document limits (graphql/limits.ts), failed logins (authentication/login-limiter.ts), watch timing
 * (watch/settings.ts), change-feed retention (store/feed/change-log.ts) and the
 * bounds of internal caches.
 *
 * A few rows can be changed with an environment variable (read once, at start, by
 * `resolveLimits`); the rest only by an embedder (GatewayOptions.limits, used by tests), within
 * what the stores and parsers allow.
 */

const KiB = 1024;
const MiB = 1024 * KiB;

export interface GatewayLimits {
  /** Request body bytes (REST and GraphQL over HTTP) → 413. */
  bodyBytes: number;
  /** Bodies up to this size are read and discarded before the 413 is sent (no reset). */
  discardBytes: number;
  /** Nesting depth of any JSON document (body, patch, GraphQL variables) → 400. */
  jsonDepth: number;
  /** Serialised size of one stored object → 422. */
  objectBytes: number;
  /** Labels per object → 422. */
  labels: number;
  /** Annotations per object → 422. */
  annotations: number;
  /** Total bytes of annotation keys and values of one object → 422. */
  annotationBytes: number;
  /** Finalizers per object → 422. */
  finalizers: number;
  /** Characters of one labelSelector/fieldSelector value, and of all of them together → 400. */
  selectorChars: number;
  /** Terms of all label and field selectors of a request together → 400. */
  selectorTerms: number;
  /** `sort` keys of one request → 400. */
  sortKeys: number;
  /** Largest `size` (page size) → 400. */
  pageSize: number;
  /** Items of a list without `size` → 400 asking for `size`. */
  unpagedItems: number;
  /**
   * Serialised bytes of the objects of one response: a REST list (with or without `size`) or a
   * whole GraphQL operation → 400 / BAD_REQUEST asking for smaller pages (operations/budget.ts).
   */
  responseBytes: number;
  /** One WebSocket message from a client (REST watch, graphql-ws) → close 1009. */
  wsMessageBytes: number;
  /** Concurrent watches (REST WebSocket/ndjson and GraphQL subscriptions) per user → 429. */
  watchesPerUser: number;
  /** Concurrent TCP connections from one client address → 429 and close. */
  connectionsPerAddress: number;
  /** Deadline of every store operation → 503. */
  storeTimeoutMs: number;
  /** Time to receive the request headers → 408. */
  headersTimeoutMs: number;
  /** Time to receive a whole request, body included → 408. */
  requestTimeoutMs: number;
  /** Idle keep-alive connection between requests → closed. */
  keepAliveTimeoutMs: number;
  /** Request line plus headers, bytes (the server's maxHeaderSize, set in server.ts; more gets 431). */
  headerBytes: number;
  /** Cost of one GraphQL operation, computed before it runs (graphql/cost.ts) → BAD_REQUEST (400). */
  graphqlMaxCost: number;
}

export const LIMITS: Readonly<GatewayLimits> = Object.freeze({
  bodyBytes: 3 * MiB,
  discardBytes: 64 * MiB,
  jsonDepth: 64,
  objectBytes: 1 * MiB,
  labels: 64,
  annotations: 64,
  annotationBytes: 256 * KiB,
  finalizers: 32,
  selectorChars: 4096,
  selectorTerms: 64,
  sortKeys: 8,
  pageSize: 10_000,
  unpagedItems: 10_000,
  responseBytes: 32 * MiB,
  wsMessageBytes: 1 * MiB,
  watchesPerUser: 100,
  connectionsPerAddress: 256,
  storeTimeoutMs: 5000,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5000,
  headerBytes: 16 * KiB,
  graphqlMaxCost: 50_000,
});

/** Environment variables that override a row. */
export const LIMIT_ENV: Partial<Record<keyof GatewayLimits, string>> = {
  storeTimeoutMs: 'SVC_STORE_TIMEOUT_MS',
  connectionsPerAddress: 'SVC_MAX_CONNECTIONS_PER_ADDRESS',
  watchesPerUser: 'SVC_MAX_WATCHES_PER_USER',
  headersTimeoutMs: 'SVC_HEADERS_TIMEOUT_MS',
  requestTimeoutMs: 'SVC_REQUEST_TIMEOUT_MS',
  graphqlMaxCost: 'SVC_GRAPHQL_MAX_COST',
};

/** The limits in force: defaults, then environment overrides, then explicit ones (tests). */
export function resolveLimits(env: NodeJS.ProcessEnv = process.env, explicit: Partial<GatewayLimits> = {}): GatewayLimits {
  const out: GatewayLimits = { ...LIMITS };
  for (const [key, name] of Object.entries(LIMIT_ENV) as [keyof GatewayLimits, string][]) {
    const raw = env[name];
    if (raw === undefined || raw === '') continue;
    const n = Number(raw);
    if (!Number.isSafeInteger(n) || n < 1) throw new Error(`${name} must be a positive integer, got "${raw}"`);
    out[key] = n;
  }
  return { ...out, ...explicit };
}
