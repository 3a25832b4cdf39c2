/**
 * The one authorization port (like k8s authorizer.Authorizer). The HTTP pipeline, the GraphQL
 * `@auth` directive and the operations layer all ask this interface; authorization/rbac-authorizer.ts is the
 * implementation the gateway runs.
 */
import type { Caller } from './caller.js';
import { Forbidden, Unauthenticated, type ApiError } from '../errors/index.js';

export type { Caller } from './caller.js';
export { ANONYMOUS } from './caller.js';

/** Request attributes, as parsed by requestinfo/requestinfo.ts or built by a GraphQL field. */
export interface Attributes {
  caller: Caller;
  /** get, list, watch, create, update, patch, delete, deletecollection; or a lowercase method. */
  verb: string;
  isResourceRequest: boolean;
  apiGroup: string;
  apiVersion: string;
  resource: string;
  subresource: string;
  name: string;
  /** URL path, for non-resource requests. */
  path: string;
}

export interface Decision {
  allowed: boolean;
  reason: string;
  /**
   * When the request as a whole is denied but rules with `resourceNames` grant the verb on
   * named objects: those names. A watch opens restricted to them (events of other objects are
   * never sent); nothing else treats a partial grant as an allowance.
   */
  names?: ReadonlySet<string>;
}

export interface Authorizer {
  authorize(attrs: Attributes): Promise<Decision>;
}

/** Allows everything. Only for benchmarks of layers below authorization; see authorization/system.ts for internals. */
export const allowAll: Authorizer = {
  async authorize() {
    return { allowed: true, reason: 'allow-all authorizer' };
  },
};

/** True when two attribute sets name the same request of the same caller. */
export const sameRequest = (a: Attributes, b: Attributes): boolean =>
  a.caller === b.caller &&
  a.verb === b.verb &&
  a.isResourceRequest === b.isResourceRequest &&
  a.apiGroup === b.apiGroup &&
  a.resource === b.resource &&
  a.subresource === b.subresource &&
  a.name === b.name &&
  (a.isResourceRequest || a.path === b.path);

/**
 * An authorizer that already knows the decision for one request (taken by the HTTP pipeline or
 * the @auth directive) and asks `inner` about anything else, so one request is authorized once.
 */
export function preauthorized(attrs: Attributes, decision: Decision, inner: Authorizer): Authorizer & { inner: Authorizer } {
  return {
    inner,
    authorize: (a) => (sameRequest(a, attrs) ? Promise.resolve(decision) : inner.authorize(a)),
  };
}

/**
 * The authorizer that decides afresh, past any decision taken once for the request
 * (`preauthorized`): long-lived streams re-check with it, so a revoked right takes effect.
 */
export function liveAuthorizer(a: Authorizer): Authorizer {
  let cur = a;
  for (let next = (cur as { inner?: Authorizer }).inner; next; next = (cur as { inner?: Authorizer }).inner) cur = next;
  return cur;
}

/**
 * What a request asks, without who asks: a parsed REST request (requestinfo/requestinfo.ts
 * RequestInfo), a GraphQL field, an operation on a model. Omitted fields: a resource request,
 * no subresource, no name, no path.
 */
export interface Target {
  verb: string;
  isResourceRequest?: boolean;
  apiGroup: string;
  apiVersion: string;
  resource: string;
  subresource?: string;
  name?: string;
  path?: string;
}

/** The authorization attributes of a request (the one place every door builds them). */
export function attributesOf(caller: Caller, t: Target): Attributes {
  return {
    caller,
    verb: t.verb,
    isResourceRequest: t.isResourceRequest ?? true,
    apiGroup: t.apiGroup,
    apiVersion: t.apiVersion,
    resource: t.resource,
    subresource: t.subresource ?? '',
    name: t.name ?? '',
    path: t.path ?? '',
  };
}

/**
 * The error of a denied request, the same on every door (REST 401/403, GraphQL
 * UNAUTHENTICATED/FORBIDDEN): an anonymous caller is asked to authenticate, an authenticated
 * one is forbidden.
 */
export function denial(attrs: Attributes): ApiError {
  const message = deniedMessage(attrs);
  return attrs.caller.authenticated ? new Forbidden(message) : new Unauthenticated(`authentication required: ${message}`);
}

/** A human-readable "user X cannot verb what" for 403 answers. */
export function deniedMessage(attrs: Attributes): string {
  if (!attrs.isResourceRequest) return `user "${attrs.caller.username}" cannot ${attrs.verb} path "${attrs.path}"`;
  const what = `${attrs.subresource ? `${attrs.resource}/${attrs.subresource}` : attrs.resource}${attrs.name ? ` "${attrs.name}"` : ''}`;
  const where = attrs.apiGroup ? `${attrs.apiGroup}/${attrs.apiVersion}` : attrs.apiVersion;
  return `user "${attrs.caller.username}" cannot ${attrs.verb} ${what} in ${where}`;
}
