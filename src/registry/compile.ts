/**
 * Turns a ModelDeclaration into a registered Model: naming rules, reserved groups, the root
 * JSON Schema and its validator, compiled indexes and the storage description.
 */
import type { IndexValues } from '../store/types.js';
import type { JSONSchema, Model, ModelDeclaration } from './model.js';
import { compileIndexes } from './indexes.js';
import { isDnsSubdomain, isReservedGroup } from './metadata.js';
import { buildRootSchema, compileValidator } from './schema.js';

export class RegistrationError extends Error {
  override name = 'RegistrationError';
}

export interface CompileOptions {
  /** Plugin declaring the model; reserved groups are refused for plugins. */
  plugin?: string;
  /**
   * Version of the declaring plugin (its manifest's spec.version). Stores use it to tell a newer
   * declaration of a model's indexes from an older one when several gateway processes share a
   * database (store/mongo/indexes.ts).
   */
  pluginVersion?: string;
  /** Platform kinds may use the reserved groups and extra top-level fields. */
  platform?: boolean;
  extraTopLevel?: string[];
}

/** Simple English plural of a lowercase word: policy → policies, class → classes, person → persons. */
export function defaultPlural(singular: string): string {
  if (/[^aeiou]y$/.test(singular)) return `${singular.slice(0, -1)}ies`;
  if (/(s|x|z|ch|sh)$/.test(singular)) return `${singular}es`;
  return `${singular}s`;
}

const KIND = /^[A-Z][A-Za-z0-9]*$/;
const VERSION = /^v[0-9]+((alpha|beta)[0-9]+)?$/;
const RESOURCE = /^[a-z][a-z0-9-]*$/;

export function compileModel(decl: ModelDeclaration, opts: CompileOptions = {}): Model {
  if (!decl || typeof decl !== 'object') throw new RegistrationError('a model declaration must be an object');
  const group = typeof decl.group === 'string' ? decl.group : '';
  const where = `model ${group || '(core)'}/${decl.version}/${decl.kind}`;
  if (!opts.platform) {
    if (isReservedGroup(group)) {
      throw new RegistrationError(
        `${where}: group "${group}" is reserved for the platform (the empty group, svc.run and *.svc.run); use a domain you own`,
      );
    }
  }
  if (group !== '' && !isDnsSubdomain(group)) throw new RegistrationError(`${where}: group must be a DNS subdomain`);
  if (typeof decl.version !== 'string' || !VERSION.test(decl.version)) {
    throw new RegistrationError(`${where}: version must look like v1, v1alpha1 or v2beta3`);
  }
  if (typeof decl.kind !== 'string' || !KIND.test(decl.kind)) {
    throw new RegistrationError(`${where}: kind must be PascalCase letters and digits`);
  }
  const singular = decl.singular ?? decl.kind.toLowerCase();
  const plural = decl.plural ?? defaultPlural(singular);
  for (const [label, v] of [
    ['singular', singular],
    ['plural', plural],
  ] as const) {
    if (typeof v !== 'string' || !RESOURCE.test(v)) {
      throw new RegistrationError(`${where}: ${label} must be lowercase letters, digits or "-"`);
    }
  }
  if (singular === plural) throw new RegistrationError(`${where}: singular and plural must differ`);
  if (decl.schema !== undefined && (typeof decl.schema !== 'object' || decl.schema === null)) {
    throw new RegistrationError(`${where}: schema must be a JSON Schema object`);
  }

  const schema: JSONSchema = buildRootSchema(decl.schema, opts.extraTopLevel);
  let validate: Model['validate'];
  try {
    validate = compileValidator(schema);
  } catch (e) {
    throw new RegistrationError(`${where}: invalid schema: ${(e as Error).message}`);
  }
  let indexes: Model['indexes'];
  try {
    indexes = compileIndexes(decl.indexes, where, schema);
  } catch (e) {
    throw new RegistrationError((e as Error).message);
  }
  const byName = new Map(indexes.map((i) => [i.name, i]));
  const apiVersion = group ? `${group}/${decl.version}` : decl.version;
  const key = `${group}/${decl.version}/${plural}`;
  return {
    group,
    version: decl.version,
    kind: decl.kind,
    singular,
    plural,
    apiVersion,
    plugin: opts.plugin,
    schema,
    validate,
    indexes,
    index: (name) => byName.get(name),
    storage: {
      key,
      ...(opts.pluginVersion !== undefined && { version: opts.pluginVersion }),
      indexes: indexes.map(({ name, unique, order, fingerprint, path, numeric, text }) => ({
        name,
        unique,
        order,
        fingerprint,
        ...(path !== undefined && { path }),
        ...(numeric && { numeric }),
        ...(text && { text }),
      })),
      indexValues(obj) {
        const out: IndexValues = {};
        for (const i of indexes) out[i.name] = i.values(obj);
        return out;
      },
    },
  };
}
