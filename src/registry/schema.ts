/**
 * JSON Schema handling: builds the root schema of a model from its declaration and compiles it
 * with ajv (draft 2020-12: $defs, $ref recursion, required, maxLength, minimum, maximum, enum…).
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ErrorObject } from 'ajv';
import type { FieldError } from '../errors/index.js';
import type { JSONSchema } from './model.js';

const ajv = new Ajv2020({ allErrors: true, strict: false, validateFormats: false });

/** Properties the platform defines on every object; a model only contributes spec/status (and platform kinds extras). */
const BASE_PROPERTIES: Record<string, JSONSchema> = {
  apiVersion: { type: 'string' },
  kind: { type: 'string' },
  metadata: { type: 'object' },
};

/**
 * The root schema of a model's objects. Only `properties.spec`, `properties.status`, `required`
 * and `$defs` are taken from the declaration (docs/API.md §7); `extraTopLevel` lets platform kinds
 * (Role.rules, RoleBinding.subjects…) add more top-level fields.
 */
export function buildRootSchema(declared: JSONSchema | undefined, extraTopLevel: string[] = []): JSONSchema {
  const props = (declared?.properties ?? {}) as Record<string, JSONSchema>;
  const properties: Record<string, JSONSchema> = {
    ...BASE_PROPERTIES,
    spec: props.spec ?? { type: 'object' },
    status: props.status ?? { type: 'object' },
  };
  for (const k of extraTopLevel) if (props[k]) properties[k] = props[k];
  const allowedRequired = new Set(['spec', 'status', ...extraTopLevel]);
  const required = Array.isArray(declared?.required)
    ? (declared!.required as unknown[]).filter((r): r is string => typeof r === 'string' && allowedRequired.has(r))
    : [];
  const root: JSONSchema = { type: 'object', properties };
  if (required.length) root.required = required;
  if (declared?.$defs) root.$defs = declared.$defs;
  if (typeof declared?.description === 'string') root.description = declared.description;
  return root;
}

export type Validator = (obj: unknown) => FieldError[];

/** Compiles a root schema; throws with ajv's message when the schema itself is invalid. */
export function compileValidator(root: JSONSchema): Validator {
  const validate = ajv.compile(root);
  return (obj) => (validate(obj) ? [] : toFieldErrors(validate.errors ?? []));
}

/** `/spec/tags/0` → `spec.tags[0]`. */
function pointerToField(pointer: string): string {
  let out = '';
  for (const raw of pointer.split('/').slice(1)) {
    const seg = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (/^\d+$/.test(seg)) out += `[${seg}]`;
    else out += out ? `.${seg}` : seg;
  }
  return out;
}

const join = (base: string, key: string) => (base ? `${base}.${key}` : key);

function toFieldErrors(errors: ErrorObject[]): FieldError[] {
  const out: FieldError[] = [];
  const seen = new Set<string>();
  for (const e of errors) {
    let field = pointerToField(e.instancePath);
    let message = e.message ?? 'is invalid';
    if (e.keyword === 'required') {
      field = join(field, String((e.params as { missingProperty: string }).missingProperty));
      message = 'is required';
    } else if (e.keyword === 'additionalProperties') {
      field = join(field, String((e.params as { additionalProperty: string }).additionalProperty));
      message = 'is not allowed';
    } else if (e.keyword === 'enum') {
      message = `must be one of ${JSON.stringify((e.params as { allowedValues: unknown[] }).allowedValues)}`;
    }
    // `if`/`anyOf` wrappers repeat their children's errors; keep the informative ones.
    if (e.keyword === 'if' || e.keyword === 'anyOf' || e.keyword === 'oneOf' || e.keyword === '$ref') continue;
    const k = `${field}\u0000${message}`;
    if (seen.has(k)) continue;
    seen.add(k);
    out.push({ field: field || '(root)', message });
  }
  return out;
}
