/** plugin.yaml (CONTRACT §7): apiVersion plugin.svc.run/v1alpha1, kind Plugin, metadata.name, spec. */
import { readFile } from 'node:fs/promises';
import yaml from 'js-yaml';
import type { ModelDeclaration } from '../registry/model.js';
import { checkObjectName } from '../registry/metadata.js';

export interface PluginManifest {
  name: string;
  version: string;
  displayName: string;
  enabled: boolean;
  models: ModelDeclaration[];
}

export class PluginError extends Error {
  override name = 'PluginError';
}

export async function readManifest(file: string): Promise<PluginManifest> {
  let doc: unknown;
  try {
    doc = yaml.load(await readFile(file, 'utf8'));
  } catch (e) {
    throw new PluginError(`${file}: ${(e as Error).message}`);
  }
  const m = doc as Record<string, any> | null;
  if (!m || typeof m !== 'object') throw new PluginError(`${file}: not a YAML mapping`);
  if (m.apiVersion !== 'plugin.svc.run/v1alpha1' || m.kind !== 'Plugin') {
    throw new PluginError(`${file}: expected apiVersion plugin.svc.run/v1alpha1 and kind Plugin`);
  }
  const name = m.metadata?.name;
  const nameErrors = checkObjectName(name);
  if (nameErrors.length) throw new PluginError(`${file}: metadata.name ${nameErrors[0]!.message}`);
  const spec = (m.spec ?? {}) as Record<string, any>;
  if (spec.models !== undefined && !Array.isArray(spec.models)) throw new PluginError(`${file}: spec.models must be a list`);
  return {
    name,
    version: String(spec.version ?? '0.0.0'),
    displayName: String(spec.displayName ?? name),
    enabled: spec.enabled !== false && m.enabled !== false,
    models: (spec.models ?? []) as ModelDeclaration[],
  };
}
