/**
 * What a plugin may declare (docs/API.md §3, §7). Every
 * refusal throws PluginError with a message naming the plugin and, for bundle documents, the
 * file and the document's index.
 */
import type { PluginScope } from '../authorization/admission.js';
import type { PolicyRule } from '../authorization/match.js';
import { checkObjectName, checkPluginKey, isDnsSubdomain } from '../registry/metadata.js';
import { isPlainObject } from '../store/object.js';
import { PluginError } from './manifest.js';

/** Label put on every bundle object: which plugin created it. */
export const PLUGIN_NAME_LABEL = 'plugin.svc.run/plugin-name';
/** The group of the Plugin kind itself; nobody may declare models in it. */
export const PLUGIN_GROUP = 'plugin.svc.run';

/**
 * Groups `""` and `svc.run` are refused for every plugin; `*.svc.run` is allowed only for
 * platform plugins (shipped inside the gateway's source), and `plugin.svc.run` for none.
 */
export function checkModelGroup(plugin: string, group: unknown, platform: boolean, where: string): void {
  const g = typeof group === 'string' ? group : '';
  if (g === '' || g === 'svc.run' || g === PLUGIN_GROUP) {
    throw new PluginError(`${where}: plugin "${plugin}" may not use the reserved group "${g}"`);
  }
  if (g.endsWith('.svc.run') && !platform) {
    throw new PluginError(
      `${where}: plugin "${plugin}" may not use group "${g}": *.svc.run is reserved for the platform; use a domain you own`,
    );
  }
}

/** Where a bundle document came from, for messages: `extensions/roles.yaml document 2`. */
export interface DocumentSource {
  file: string;
  /** 1-based position in its multi-document file. */
  index: number;
}

export const describeSource = (s: DocumentSource) => `${s.file} document ${s.index}`;

/** Label and annotation keys of a bundle object; Role names and the role-template label. */
export function checkBundleObject(plugin: string, obj: Record<string, unknown>, isRole: boolean, src: DocumentSource): void {
  const where = describeSource(src);
  const meta = isPlainObject(obj.metadata) ? obj.metadata : undefined;
  if (!meta) throw new PluginError(`${where}: metadata is required`);
  const nameErrors = checkObjectName(meta.name);
  if (nameErrors.length) throw new PluginError(`${where}: metadata.name ${nameErrors[0]!.message}`);
  for (const field of ['labels', 'annotations'] as const) {
    const map = meta[field];
    if (map === undefined) continue;
    if (!isPlainObject(map)) throw new PluginError(`${where}: metadata.${field} must be a mapping`);
    for (const key of Object.keys(map)) {
      if (field === 'labels' && key === PLUGIN_NAME_LABEL) continue; // set by the gateway anyway
      const errors = checkPluginKey(key, `metadata.${field}`);
      if (errors.length) throw new PluginError(`${where}: metadata.${field}: ${errors[0]!.message}`);
    }
  }
  if (isRole) {
    const name = meta.name as string;
    if (!name.startsWith(`${plugin}-`)) {
      throw new PluginError(`${where}: role template "${name}" must be named "${plugin}-…" (the plugin's name, then "-")`);
    }
    const labels = isPlainObject(meta.labels) ? meta.labels : {};
    if (labels['svc.run/role-template'] !== 'true') {
      throw new PluginError(`${where}: role "${name}" must carry the label svc.run/role-template: "true" (a plugin ships role templates only)`);
    }
  }
}

/** The API groups under which a plugin's custom routes may live, for each group it owns. */
export function routeGroups(ownedGroups: Iterable<string>): Set<string> {
  const out = new Set<string>();
  for (const g of ownedGroups) for (const p of ['', 'console.api.', 'uc.api.', 'api.']) out.add(`${p}${g}`);
  return out;
}

/**
 * What a plugin's role templates may grant without the enabling user holding it (docs/API.md §6):
 * resource rules on the groups it owns (`groups`, from routeGroups) and non-resource rules below
 * `/apis/<owned group>`, and UI permissions `plugin:<name>:…`. Anything else (another group, `*`,
 * a path elsewhere, `system:…` UI permissions) reaches beyond the plugin.
 */
export function pluginScope(plugin: string, groups: ReadonlySet<string>): PluginScope {
  const ownPath = (url: string) => [...groups].some((g) => url === `/apis/${g}` || url.startsWith(`/apis/${g}/`));
  return {
    ruleInside: (rule: PolicyRule) =>
      (rule.nonResourceURLs ?? []).every(ownPath) && (rule.apiGroups ?? []).every((g) => groups.has(g)),
    uiInside: (permission: string) => permission.startsWith(`plugin:${plugin}:`),
  };
}

const ROUTE_METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS']);
const SEGMENT = /^(\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z0-9._~!$&'()*+,;=:@%-]+)$/;

/**
 * A custom route: `/apis/<group>/<version>/…` with `<group>` one the plugin owns (or its
 * console.api./uc.api./api. form), never under /api, literal first three segments.
 * `shadows(group, version, resource)` tells whether a generated route already serves the path.
 */
export function checkRoute(
  plugin: string,
  route: { method?: unknown; path?: unknown },
  allowed: Set<string>,
  shadows: (group: string, version: string, resource: string) => boolean,
  where: string,
): { method: string; segments: string[] } {
  const method = typeof route.method === 'string' ? route.method.toUpperCase() : '';
  if (!ROUTE_METHODS.has(method)) throw new PluginError(`${where}: method must be one of ${[...ROUTE_METHODS].join(', ')}`);
  const path = route.path;
  if (typeof path !== 'string' || !path.startsWith('/')) throw new PluginError(`${where}: path must start with "/"`);
  const segments = path.slice(1).split('/');
  if (segments[0] === 'api') throw new PluginError(`${where}: custom routes may not live under /api (reserved for the platform)`);
  if (segments[0] !== 'apis' || segments.length < 4) {
    throw new PluginError(`${where}: custom routes live under /apis/<group>/<version>/…`);
  }
  for (const s of segments) if (!SEGMENT.test(s)) throw new PluginError(`${where}: path segment "${s}" is not allowed`);
  const [, group, version, resource] = segments as [string, string, string, string];
  if (group.includes('{') || version.includes('{')) throw new PluginError(`${where}: the group and version must be literal`);
  if (!isDnsSubdomain(group) || !allowed.has(group)) {
    throw new PluginError(
      `${where}: plugin "${plugin}" does not own group "${group}" (allowed: ${[...allowed].sort().join(', ') || 'none, it declares no model'})`,
    );
  }
  if (resource.includes('{') || shadows(group, version, resource)) {
    if (resource.includes('{')) throw new PluginError(`${where}: the resource segment must be literal`);
    throw new PluginError(`${where}: ${path} would shadow the generated API of ${group}/${version} ${resource}`);
  }
  return { method, segments };
}
