/**
 * One observer per gateway, called by the HTTP pipeline at the start of each request; it sees
 * the response complete and then, in one place, counts it (observability/metrics.ts), writes its audit
 * line when it is a write or a denial (observability/audit.ts) and its request-log line (pino, info).
 * The pipeline fills in what it learns on the way (the caller, the request attributes); the
 * GraphQL layer reports its operations and its audited fields here too.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { Caller } from '../identity/caller.js';
import type { RequestInfo, RequestTarget } from '../requestinfo/requestinfo.js';
import { COLLECTION_GET_PARAMS } from '../requestinfo/query-params.js';
import { WRITE_METHODS, WRITE_VERBS, type AuditLog, type AuditObjectRef } from './audit.js';
import { boundedVerb, type GatewayMetrics, type ResourceLabels } from './metrics.js';

export const GRAPHQL_REQUEST_PATH = '/graphql';

/** What is known about one request; the pipeline fills it in as it goes. */
export interface Observation {
  caller?: Caller;
  info?: RequestInfo;
  /** Audit lines already written for this request's GraphQL fields. */
  audited?: number;
}

/** An upgrade (WebSocket) request: its end is the status it was answered with. */
export interface UpgradeObservation extends Observation {
  end(status: number): void;
}

/** A GraphQL field the @auth directive checked: what the audit log needs of it. */
export interface FieldOutcome {
  verb: string;
  group: string;
  version: string;
  resource: string;
  subresource: string;
  name: string;
  status: number;
}

export interface ObserverDeps {
  metrics?: GatewayMetrics;
  audit?: AuditLog;
  /** The request log (one line per request at info). */
  log: Logger;
  /** Whether a model is registered: only those name a metric label. */
  known(group: string, version: string, resource: string): boolean;
}

interface Started extends Observation {
  start: bigint;
  received: number;
}

const NON_RESOURCE: Omit<ResourceLabels, 'verb'> = { group: '', version: '', resource: '' };

const sourceIP = (req: IncomingMessage) => {
  const a = req.socket?.remoteAddress ?? '';
  return a.startsWith('::ffff:') ? a.slice(7) : a;
};

/**
 * The request URI for the audit log: the raw path, and of the query only the parameters the
 * gateway reads (selectors, paging, watch): an unknown one could be a misplaced secret.
 */
function requestURI(target: RequestTarget): string {
  let query = '';
  for (const [k, v] of target.searchParams) {
    if (COLLECTION_GET_PARAMS.has(k)) query += `${query ? '&' : '?'}${encodeURIComponent(k)}=${encodeURIComponent(v)}`;
  }
  return target.pathname + query;
}

/** The name of the object a create made, from its Location header (rest/handler.ts), else ''. */
function createdName(res: ServerResponse | undefined): string {
  const location = res?.statusCode === 201 ? res.getHeader('location') : undefined;
  if (typeof location !== 'string') return '';
  try {
    return decodeURIComponent(location.slice(location.lastIndexOf('/') + 1));
  } catch {
    return '';
  }
}

export class RequestObserver {
  private readonly current = new WeakMap<IncomingMessage, Started>();
  private readonly logging: boolean;

  constructor(private readonly deps: ObserverDeps) {
    this.logging = deps.log.isLevelEnabled('info');
  }

  /** Called once at the start of an HTTP request; the rest happens when `res` closes. */
  request(req: IncomingMessage, res: ServerResponse, target: RequestTarget): Observation {
    const o: Started = { start: process.hrtime.bigint(), received: Date.now() };
    this.current.set(req, o);
    res.once('close', () => this.complete(req, o, target, res.statusCode, res));
    return o;
  }

  /** Called once at the start of a WebSocket upgrade; `end(status)` when it is answered. */
  upgrade(req: IncomingMessage, target: RequestTarget): UpgradeObservation {
    const o: Started = { start: process.hrtime.bigint(), received: Date.now() };
    let ended = false;
    return Object.assign(o, {
      end: (status: number) => {
        if (ended) return;
        ended = true;
        this.complete(req, o, target, status);
      },
    });
  }

  /** The caller of a request served outside the pipeline's own authentication (GraphQL). */
  identify(req: IncomingMessage, caller: Caller): void {
    const o = this.current.get(req);
    if (o) o.caller = caller;
  }

  /** A GraphQL operation ended with `code` ("OK" or its first error's code). */
  graphqlOperation(type: string, name: string | undefined, code: string): void {
    this.deps.metrics?.graphqlOperation(type, name, code);
  }

  /** A GraphQL field checked by @auth ended: audited when it writes or was denied. */
  graphqlField(req: IncomingMessage | undefined, caller: Caller, f: FieldOutcome): void {
    const audit = this.deps.audit;
    if (!audit || !(WRITE_VERBS.has(f.verb) || f.status === 401 || f.status === 403)) return;
    const o = req ? this.current.get(req) : undefined;
    if (o) o.audited = (o.audited ?? 0) + 1;
    const now = Date.now();
    audit.write({
      verb: f.verb,
      user: { username: caller.username },
      sourceIPs: req ? [sourceIP(req)] : [],
      objectRef: { apiGroup: f.group, apiVersion: f.version, resource: f.resource, name: f.name, subresource: f.subresource },
      requestURI: GRAPHQL_REQUEST_PATH,
      responseStatus: { code: f.status },
      requestReceivedTimestamp: new Date(o?.received ?? now).toISOString(),
    });
  }

  private complete(req: IncomingMessage, o: Started, target: RequestTarget, status: number, res?: ServerResponse): void {
    const seconds = Number(process.hrtime.bigint() - o.start) / 1e9;
    const info = o.info;
    const method = req.method ?? 'GET';
    const username = o.caller?.username ?? 'anonymous';
    const { metrics, audit } = this.deps;
    if (metrics) {
      const resource = !!info?.isResourceRequest && this.deps.known(info.apiGroup, info.apiVersion, info.resource);
      const labels: ResourceLabels = resource
        ? { verb: boundedVerb(info!.verb, true), group: info!.apiGroup, version: info!.apiVersion, resource: info!.resource }
        : { verb: boundedVerb(method.toLowerCase(), false), ...NON_RESOURCE };
      metrics.request(labels, status, seconds);
    }
    if (audit) {
      const denied = status === 401 || status === 403;
      const graphql = target.pathname === GRAPHQL_REQUEST_PATH;
      const verb = info ? info.verb : method.toLowerCase();
      const write = !graphql && (info?.isResourceRequest ? WRITE_VERBS.has(verb) : WRITE_METHODS.has(verb));
      if (write || (denied && !(graphql && o.audited))) {
        const objectRef: AuditObjectRef | undefined = info?.isResourceRequest
          ? { apiGroup: info.apiGroup, apiVersion: info.apiVersion, resource: info.resource, name: info.name || createdName(res), subresource: info.subresource }
          : undefined;
        audit.write({
          verb,
          user: { username },
          sourceIPs: [sourceIP(req)],
          objectRef,
          requestURI: requestURI(target),
          responseStatus: { code: status },
          requestReceivedTimestamp: new Date(o.received).toISOString(),
        });
      }
    }
    if (this.logging) {
      this.deps.log.info({ method, path: target.pathname, status, duration: Math.round(seconds * 1e6) / 1e3, username }, 'request');
    }
  }
}
