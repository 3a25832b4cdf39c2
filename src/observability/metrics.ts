/**
 * Prometheus metrics of one gateway (docs/API.md §10), in a registry of its own (never prom-client's
 * global one: several gateways may run in one process). Served at GET /metrics (observability/observer.ts
 * mounts it behind RBAC as the non-resource URL `/metrics`).
 *
 * Every label is bounded: resource labels only name registered models (any other path,
 * non-resource requests included, gets empty group/version/resource), verbs and codes come from
 * fixed sets, and GraphQL operation names are capped (MAX_OPERATION_NAMES, then "other").
 */
import { collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import { MethodNotAllowed } from '../errors/index.js';
import type { RequestHandler } from '../requestinfo/handler.js';
import { NO_PARAMS, rejectUnknownParams } from '../requestinfo/query-params.js';
import type { RequestTarget } from '../requestinfo/requestinfo.js';
import { PlainCounter, PlainHistogram } from './series.js';

const REQUEST_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const STORE_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Distinct GraphQL operation names kept as label values; later ones count as "other". */
export const MAX_OPERATION_NAMES = 100;
const OPERATION_NAME_MAX_LENGTH = 64;
const OPERATION_TYPES = new Set(['query', 'mutation', 'subscription']);
const GRAPHQL_CODES = new Set(['OK', 'BAD_REQUEST', 'UNAUTHENTICATED', 'FORBIDDEN', 'NOT_FOUND', 'CONFLICT', 'INVALID', 'UNAVAILABLE', 'INTERNAL', 'TOO_MANY_REQUESTS', 'GRAPHQL_PARSE_FAILED', 'GRAPHQL_VALIDATION_FAILED']);

/** The resource labels of a REST request; empty strings for anything but a registered model. */
export interface ResourceLabels {
  verb: string;
  group: string;
  version: string;
  resource: string;
}

export interface WatcherCount {
  group: string;
  version: string;
  resource: string;
  count: number;
}

export class GatewayMetrics {
  readonly registry = new Registry();
  // The four metrics every request touches are plain series (observability/series.ts); keys join the
  // label values with "\n", which no bounded label value contains.
  private readonly requests: PlainCounter;
  private readonly durations: PlainHistogram;
  private readonly graphql: PlainCounter;
  private readonly store: PlainHistogram;
  private readonly operationNames = new Set<string>();

  constructor(watchers: () => WatcherCount[]) {
    const registry = this.registry;
    collectDefaultMetrics({ register: registry });
    this.requests = new PlainCounter('apiserver_request_total', 'REST requests by verb, group, version, resource and HTTP status code.', registry);
    this.durations = new PlainHistogram(
      'apiserver_request_duration_seconds',
      'REST request latency in seconds (watches excluded: they last as long as they stay open).',
      registry,
      REQUEST_BUCKETS,
    );
    this.graphql = new PlainCounter(
      'graphql_operations_total',
      'GraphQL operations by type, name (bounded; "anonymous" without a name, "other" past the cap) and outcome code ("OK" or the first error code).',
      registry,
    );
    new Gauge({
      name: 'svc_watchers',
      help: 'Open watches (REST WebSocket and ndjson, GraphQL subscriptions) by model.',
      labelNames: ['group', 'version', 'resource'],
      registers: [registry],
      collect() {
        this.reset();
        for (const w of watchers()) this.set({ group: w.group, version: w.version, resource: w.resource }, w.count);
      },
    });
    this.store = new PlainHistogram(
      'svc_store_operation_duration_seconds',
      'Store operation latency in seconds, by store (embedded, mongodb) and operation.',
      registry,
      STORE_BUCKETS,
    );
  }

  /** One REST request ended with `code`, after `seconds`. */
  request(labels: ResourceLabels, code: number, seconds: number): void {
    const key = `${labels.verb}\n${labels.group}\n${labels.version}\n${labels.resource}`;
    this.requests.inc(`${key}\n${code}`, () => ({ ...labels, code: String(code) }));
    if (labels.verb !== 'watch') this.durations.observe(key, () => ({ ...labels }), seconds);
  }

  /** One GraphQL operation ended: `code` is "OK" or the first error's code. */
  graphqlOperation(type: string, name: string | undefined, code: string): void {
    const labels = {
      operation_type: OPERATION_TYPES.has(type) ? type : 'unknown',
      operation_name: this.boundedName(name),
      code: GRAPHQL_CODES.has(code) ? code : 'OTHER',
    };
    this.graphql.inc(`${labels.operation_type}\n${labels.operation_name}\n${labels.code}`, () => labels);
  }

  /** A store operation took `seconds`. */
  storeOperation(store: string, operation: string, seconds: number): void {
    this.store.observe(`${store}\n${operation}`, () => ({ store, operation }), seconds);
  }

  /** The Prometheus text exposition. */
  async text(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  close(): void {
    this.registry.clear();
  }

  private boundedName(name: string | undefined): string {
    if (!name) return 'anonymous';
    if (name.length > OPERATION_NAME_MAX_LENGTH || !/^[_A-Za-z][_0-9A-Za-z]*$/.test(name)) return 'other';
    if (this.operationNames.has(name)) return name;
    if (this.operationNames.size >= MAX_OPERATION_NAMES) return 'other';
    this.operationNames.add(name);
    return name;
  }
}

const RESOURCE_VERBS = new Set(['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection']);
const METHODS = new Set(['get', 'head', 'post', 'put', 'patch', 'delete', 'options']);

/** A verb from a fixed set: the resource verb, the lowercase method of other requests, else "other". */
export function boundedVerb(verb: string, isResourceRequest: boolean): string {
  return (isResourceRequest ? RESOURCE_VERBS : METHODS).has(verb) ? verb : 'other';
}

/**
 * GET /metrics: the text exposition. Mounted as a non-resource route, so the pipeline has
 * authorized the caller for `get` on the non-resource URL `/metrics` before it runs.
 */
export function metricsRoute(metrics: GatewayMetrics): RequestHandler<{ target: RequestTarget }> {
  return async (req, res, rc) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') throw new MethodNotAllowed(`${req.method} is not allowed on /metrics`, ['GET', 'HEAD']);
    rejectUnknownParams(rc.target.searchParams, NO_PARAMS);
    const { contentType, body } = await metrics.text();
    res.writeHead(200, { 'content-type': contentType, 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store' });
    res.end(req.method === 'HEAD' ? undefined : body);
  };
}
