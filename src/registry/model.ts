/**
 * Model declarations (what a plugin writes) and registered models (what the rest of the
 * gateway uses). Compilation from one to the other: registry/compile.ts.
 */
import type { ApiObject } from '../store/object.js';
import type { FieldError } from '../errors/index.js';
import type { StorageModel } from '../store/types.js';

/** A JSON Schema object (draft 2020-12 subset understood by ajv). */
export type JSONSchema = Record<string, unknown>;

/** IndexSpec (docs/API.md §7). Exactly one of `path` / `indexFunc`. */
export interface IndexSpec {
  name: string;
  /** Dotted path into the object, e.g. `spec.slug`. A path that reaches an array is multi-valued. */
  path?: string;
  /** Code plugins only: returns a string, an array of strings, or nothing. */
  indexFunc?: (obj: ApiObject) => string | string[] | null | undefined;
  order?: 'ASC' | 'DESC';
  unique?: boolean;
}

/** A model as declared in plugin.yaml `spec.models[]` or in a code plugin's `models`. */
export interface ModelDeclaration {
  group: string;
  version: string;
  kind: string;
  singular?: string;
  plural?: string;
  /** JSON Schema of the object; only properties.spec, properties.status, required and $defs are used. */
  schema?: JSONSchema;
  indexes?: IndexSpec[];
}

/** One index of a registered model, ready to compute values. */
export interface CompiledIndex {
  name: string;
  unique: boolean;
  order: 'ASC' | 'DESC';
  /** True for the four platform defaults (metadata.name, labels, creation/deletionTimestamp). */
  builtin: boolean;
  /** How values are derived; stable text used to detect changed definitions. */
  fingerprint: string;
  /** A path index's dotted field path (absent for indexFunc and default indexes). */
  path?: string;
  /** A path index over an `integer`/`number` field: sorts and compares as numbers (docs/API.md §7). */
  numeric?: boolean;
  /** A path index over one `string` field with no array on the way (isTextPath). */
  text?: boolean;
  values(obj: ApiObject): string[];
}

/** A registered model. Immutable once registered. */
export interface Model {
  group: string;
  version: string;
  kind: string;
  singular: string;
  plural: string;
  /** `<group>/<version>`, or just `<version>` for the core group "". */
  apiVersion: string;
  /** Plugin that declared it, or undefined for platform kinds. */
  plugin?: string;
  /** The full JSON Schema of the object (root), with `$defs`, as validated. */
  schema: JSONSchema;
  /** Validates an object against the schema; returns every failing field (empty when valid). */
  validate(obj: unknown): FieldError[];
  indexes: CompiledIndex[];
  index(name: string): CompiledIndex | undefined;
  /** What the store needs (key, index descriptors, value extraction). */
  storage: StorageModel;
}
