/** The shape every stored object has (docs/API.md §3). `spec`/`status` are model-defined. */
export interface ObjectMeta {
  name: string;
  generateName?: string;
  /** RFC 3339 UTC, set on create, never changed. */
  creationTimestamp?: string;
  /** Optimistic-lock version: 1 on create, +1 on every write. */
  version?: number;
  /** Set by DELETE only. */
  deletionTimestamp?: string;
  finalizers?: string[];
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export interface ApiObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  spec?: unknown;
  status?: unknown;
  [extra: string]: unknown;
}

/** A JSON object (not null, not an array). */
export const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
