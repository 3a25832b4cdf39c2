/**
 * The one authorization port (like k8s authorizer.Authorizer). REST, GraphQL (@auth directive)
 * and the operations layer all ask this interface; the RBAC implementation plugs in here.
 */
export interface Caller {
  /** `anonymous` for visitors without credentials. */
  username: string;
  authenticated: boolean;
  /** Roles held directly (bindings + anonymous/authenticated); resolution happens in rbac/. */
  roles: string[];
}

/** Request attributes, as parsed by request/requestinfo.ts or built by a GraphQL field. */
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
}

export interface Authorizer {
  authorize(attrs: Attributes): Promise<Decision>;
}

/** Placeholder until RBAC lands: allows everything. */
export const allowAll: Authorizer = {
  async authorize() {
    return { allowed: true, reason: 'allow-all authorizer' };
  },
};

export const ANONYMOUS: Caller = Object.freeze({
  username: 'anonymous',
  authenticated: false,
  roles: ['anonymous'],
}) as Caller;
