/**
 * plugin.yaml (docs/API.md §7): apiVersion plugin.svc.run/v1alpha1, kind Plugin, metadata.name and
 * spec {version, displayName, description, requires, models, enabled, console}. Every error names the file.
 *
 * `spec.console.routes` (docs/API.md §9) adds console routes over the plugin's models:
 * `[{name, title, resource: <plural>, permissions: [ui permission…], managePermissions?: […]}]`.
 */
import { readFile } from 'node:fs/promises';
import yaml from 'js-yaml';
import type { ModelDeclaration } from '../registry/model.js';
import { checkObjectName } from '../registry/metadata.js';
import { isPlainObject } from '../store/object.js';

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
  /** Console routes over the plugin's models (spec.console.routes). */
  consoleRoutes: ConsoleRoute[];
}

export interface ConsoleRoute {
  /** Route name: the menu entry is `a[data-route="<name>"]`. */
  name: string;
  title: string;
  /** Plural of one of the plugin's models. */
  resource: string;
  /** UI permissions the user must hold to see the route. */
  permissions: string[];
  /** UI permissions of create, edit and delete (default: `permissions` with `:view` → `:manage`). */
  managePermissions: string[];
}

/**
 * plugin.yaml as its author writes it (parseManifest reads it into a PluginManifest, filling in
 * the defaults). Exported to plugin authors as `svc-gateway/plugin` (plugins/public-types.ts).
 */
export interface PluginManifestDocument {
  apiVersion: typeof PLUGIN_API_VERSION;
  kind: 'Plugin';
  metadata: { name: string };
  spec?: {
    /** Compared part by part (1.10.0 > 1.9.0). Default 0.0.0. */
    version?: string;
    displayName?: string;
    description?: string;
    /** Plugins that must be started before this one. */
    requires?: string[];
    /** false: found, but left stopped. Default true. */
    enabled?: boolean;
    models?: ModelDeclaration[];
    console?: { routes?: (Pick<ConsoleRoute, 'name' | 'resource'> & Partial<Pick<ConsoleRoute, 'title' | 'permissions' | 'managePermissions'>>)[] };
  };
}

type SpecKey = keyof NonNullable<PluginManifestDocument['spec']>;

/** A plugin that can't be loaded or started; the message names the file (and document). */
export class PluginError extends Error {
  override name = 'PluginError';
}

const SPEC_KEYS = new Set<SpecKey>(['version', 'displayName', 'description', 'requires', 'models', 'enabled', 'console']);
const ROUTE_NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
/** Names the console's own routes take. */
const BUILTIN_ROUTES = new Set(['users', 'roles', 'plugins', 'login', 'forbidden']);

const stringList = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string' && x.length > 0 && x.length <= 253);

function parseConsole(value: unknown, file: string): ConsoleRoute[] {
  if (value === undefined) return [];
  if (!isPlainObject(value)) throw new PluginError(`${file}: spec.console must be a mapping`);
  for (const k of Object.keys(value)) if (k !== 'routes') throw new PluginError(`${file}: spec.console.${k} is not a console field (routes)`);
  const routes = value.routes ?? [];
  if (!Array.isArray(routes)) throw new PluginError(`${file}: spec.console.routes must be a list`);
  const seen = new Set<string>();
  return routes.map((r: unknown, i) => {
    const at = `${file}: spec.console.routes[${i}]`;
    if (!isPlainObject(r)) throw new PluginError(`${at} must be a mapping`);
    // Other keys (an icon, a menu group…) are left to future consoles and ignored here.
    if (typeof r.name !== 'string' || !ROUTE_NAME.test(r.name)) throw new PluginError(`${at}.name must be 1-63 characters of [a-z0-9-]`);
    if (BUILTIN_ROUTES.has(r.name)) throw new PluginError(`${at}.name "${r.name}" is a built-in console route`);
    if (seen.has(r.name)) throw new PluginError(`${at}.name "${r.name}" is given twice`);
    seen.add(r.name);
    if (typeof r.resource !== 'string' || !r.resource) throw new PluginError(`${at}.resource must name a model's plural`);
    if (r.title !== undefined && typeof r.title !== 'string') throw new PluginError(`${at}.title must be a string`);
    if (r.permissions !== undefined && !stringList(r.permissions)) throw new PluginError(`${at}.permissions must be a list of UI permissions`);
    if (r.managePermissions !== undefined && !stringList(r.managePermissions)) throw new PluginError(`${at}.managePermissions must be a list of UI permissions`);
    const permissions = (r.permissions as string[] | undefined) ?? [];
    return {
      name: r.name,
      title: (r.title as string | undefined) ?? r.name,
      resource: r.resource,
      permissions,
      managePermissions: (r.managePermissions as string[] | undefined) ?? permissions.map((p) => p.replace(/:view$/, ':manage')),
    };
  });
}

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
    if (!SPEC_KEYS.has(k as SpecKey)) throw new PluginError(`${file}: spec.${k} is not a manifest field (${[...SPEC_KEYS].join(', ')})`);
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
    consoleRoutes: parseConsole(spec.console, file),
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
