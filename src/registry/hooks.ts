/**
 * Per-kind behaviour plugged into the generic operations (like the strategy and admission
 * fields of a k8s generic Store): platform kinds use it for password hashing (User), RBAC
 * safety checks (Role, RoleBinding) and cache invalidation. Plugin models have none.
 */
import type { Authorizer, Caller } from '../identity/authorizer.js';
import type { ApiObject } from '../store/object.js';

export type WriteVerb = 'create' | 'update' | 'patch' | 'delete';

export interface AdmissionRequest {
  caller: Caller;
  authorizer: Authorizer;
  verb: WriteVerb;
  /** `status` for status writes, else empty. */
  subresource: string;
  /** The object as it will be written (absent for delete). */
  object?: ApiObject;
  /** The stored object (absent for create). */
  old?: ApiObject;
}

export interface KindHooks {
  /** Checks that need the caller or other objects; throws an ApiError to refuse. Nothing is written then. */
  admit?(req: AdmissionRequest): Promise<void>;
  /** Last change before a validated object is stored (e.g. hashing a write-only field). */
  prepare?(next: ApiObject, old: ApiObject | undefined): Promise<ApiObject>;
  /** What leaves the gateway (REST, GraphQL, watch): e.g. write-only fields removed. */
  present?(obj: ApiObject): ApiObject;
  /** After every committed write (create, update, delete, removal). */
  changed?(obj: ApiObject): Promise<void>;
}
