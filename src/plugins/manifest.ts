/**
 * plugin.yaml (CONTRACT §7): apiVersion plugin.svc.run/v1alpha1, kind Plugin, metadata.name and
 * spec {version, displayName, description, requires, models, enabled}. Every error names the file.
 */
import { readFile } from 'node:fs/promises';
import yaml from 'js-yaml';
import type { ModelDeclaration } from '../registry/model.js';
import { checkObjectName } from '../registry/metadata.js';
import { isPlainObject } from '../registry/object.js';

export const PLUGIN_API_VERSION = 'plugin.svc.run/v1alpha1';

export interface PluginManifest {
  name: string;
  version: string;
  displayName: string;
  description: string;
  /** Names of plugins that must be started before this one. */
  requires: string[];
  enabled: boolean;
  models: ModelDeclaration[];
}

/** A plugin that can't be loaded or started; the message names the file (and document). */
export class PluginError extends Error {
  override name = 'PluginError';
}

const SPEC_KEYS = new Set(['version', 'displayName', 'description', 'requires', 'models', 'enabled']);

export function parseManifest(text: string, file: string): PluginManifest {
  let doc: unknown;
  try {
    doc = yaml.load(text);
  } catch (e) {
    throw new PluginError(`${file}: invalid YAML: ${(e as Error).message}`);
  }
  if (!isPlainObject(doc)) throw new PluginError(`${file}: not a YAML mapping`);
  if (doc.apiVersion !== PLUGIN_API_VERSION || doc.kind !== 'Plugin') {
    throw new PluginError(`${file}: expected apiVersion ${PLUGIN_API_VERSION} and kind Plugin`);
  }
  const meta = isPlainObject(doc.metadata) ? doc.metadata : {};
  const name = meta.name;
  const nameErrors = checkObjectName(name);
  if (nameErrors.length) throw new PluginError(`${file}: metadata.name ${nameErrors[0]!.message}`);
  const spec = doc.spec === undefined ? {} : doc.spec;
  if (!isPlainObject(spec)) throw new PluginError(`${file}: spec must be a mapping`);
  for (const k of Object.keys(spec)) {
    if (!SPEC_KEYS.has(k)) throw new PluginError(`${file}: spec.${k} is not a manifest field (${[...SPEC_KEYS].join(', ')})`);
  }
  const str = (field: string, fallback: string): string => {
    const v = spec[field];
    if (v === undefined) return fallback;
    if (typeof v !== 'string' && typeof v !== 'number') throw new PluginError(`${file}: spec.${field} must be a string`);
    return String(v);
  };
  const requires = spec.requires ?? [];
  if (!Array.isArray(requires) || requires.some((r) => typeof r !== 'string' || checkObjectName(r).length)) {
    throw new PluginError(`${file}: spec.requires must be a list of plugin names`);
  }
  if (requires.includes(name)) throw new PluginError(`${file}: a plugin cannot require itself`);
  if (spec.models !== undefined && !Array.isArray(spec.models)) throw new PluginError(`${file}: spec.models must be a list`);
  if (spec.enabled !== undefined && typeof spec.enabled !== 'boolean') throw new PluginError(`${file}: spec.enabled must be true or false`);
  (spec.models as unknown[] | undefined)?.forEach((m, i) => {
    if (!isPlainObject(m)) throw new PluginError(`${file}: spec.models[${i}] must be a mapping`);
  });
  return {
    name: name as string,
    version: str('version', '0.0.0'),
    displayName: str('displayName', name as string),
    description: str('description', ''),
    requires: requires as string[],
    enabled: spec.enabled !== false,
    models: (spec.models ?? []) as ModelDeclaration[],
  };
}

export async function readManifest(file: string): Promise<PluginManifest> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    throw new PluginError(`${file}: ${(e as Error).message}`);
  }
  return parseManifest(text, file);
}
