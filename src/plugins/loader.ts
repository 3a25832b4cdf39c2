/**
 * Finding plugins: the platform plugins shipped in the gateway's source (`src/plugins/platform/`,
 * the only ones allowed `*.svc.run` groups) and every `<SVC_PLUGINS_DIR>/<dir>/plugin.yaml`.
 * `loadPlugins` (benchmarks, scripts) only registers models; the gateway uses lifecycle.ts.
 */
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { ModelDeclaration } from '../registry/model.js';
import type { Registry } from '../registry/registry.js';
import { loadCode } from './code-loader.js';
import type { GraphQLExtension } from './graphql-extension.js';
import { readManifest, type PluginManifest } from './manifest.js';

export const PLATFORM_PLUGINS_DIR = join(import.meta.dirname, 'platform');

export interface PluginSource {
  dir: string;
  /** Shipped inside the gateway (may use *.svc.run groups). */
  platform: boolean;
}

/** Plugin folders: platform ones first, then the plugins folder's, each in name order. */
export async function findPluginDirs(pluginsDir: string): Promise<PluginSource[]> {
  const out: PluginSource[] = [];
  for (const [root, platform] of [
    [PLATFORM_PLUGINS_DIR, true],
    [pluginsDir, false],
  ] as const) {
    if (!existsSync(root)) continue;
    for (const d of (await readdir(root, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name))) {
      if (d.isDirectory() && existsSync(join(root, d.name, 'plugin.yaml'))) out.push({ dir: join(root, d.name), platform });
    }
  }
  return out;
}

export interface DiscoveredPlugin {
  manifest: PluginManifest;
  dir: string;
  models: ModelDeclaration[];
  /** The code entry's custom GraphQL fields (printed with the schema by scripts/print-schema.ts). */
  graphql?: GraphQLExtension;
}

/** Manifest and models (manifest + code) of every plugin in the plugins folder (or the platform's). */
export async function discoverPlugins(pluginsDir: string, opts: { platform?: boolean } = {}): Promise<DiscoveredPlugin[]> {
  const out: DiscoveredPlugin[] = [];
  for (const { dir, platform } of await findPluginDirs(pluginsDir)) {
    if (platform !== (opts.platform ?? false)) continue;
    const manifest = await readManifest(join(dir, 'plugin.yaml'));
    const code = await loadCode(dir);
    out.push({ manifest, dir, models: [...manifest.models, ...(code?.models ?? [])], graphql: code?.graphql });
  }
  return out;
}

/** Registers the models of every enabled plugin of the folder, each plugin all or nothing. */
export async function loadPlugins(pluginsDir: string, registry: Registry, log: Logger): Promise<DiscoveredPlugin[]> {
  const started: DiscoveredPlugin[] = [];
  for (const p of await discoverPlugins(pluginsDir)) {
    if (!p.manifest.enabled) continue;
    try {
      await registry.registerAll(p.models, { plugin: p.manifest.name, pluginVersion: p.manifest.version });
      started.push(p);
    } catch (e) {
      log.error({ plugin: p.manifest.name, err: (e as Error).message }, 'plugin models refused');
    }
  }
  return started;
}
