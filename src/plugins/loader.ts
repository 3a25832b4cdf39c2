/**
 * Finds plugins in the plugins folder and registers their models (from plugin.yaml
 * `spec.models` and an optional code entry's `models`). The rest of the plugin lifecycle
 * (bundle objects, custom routes, start/stop) builds on this.
 */
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Logger } from 'pino';
import type { ModelDeclaration } from '../registry/model.js';
import type { Registry } from '../registry/registry.js';
import { PluginError, readManifest, type PluginManifest } from './manifest.js';

export interface PluginCode {
  models?: ModelDeclaration[];
}

const CODE_ENTRIES = ['index.js', 'index.mjs', 'index.ts'];

export async function loadCode(dir: string): Promise<PluginCode | undefined> {
  const file = CODE_ENTRIES.map((f) => join(dir, f)).find((f) => existsSync(f));
  if (!file) return undefined;
  const mod = (await import(pathToFileURL(resolve(file)).href)) as { default?: PluginCode };
  return mod.default ?? {};
}

export interface LoadedPlugin {
  manifest: PluginManifest;
  dir: string;
  models: ModelDeclaration[];
}

/** Reads every `<dir>/<name>/plugin.yaml`; plugins with `enabled: false` are skipped. */
export async function discoverPlugins(pluginsDir: string): Promise<LoadedPlugin[]> {
  if (!existsSync(pluginsDir)) return [];
  const out: LoadedPlugin[] = [];
  for (const d of (await readdir(pluginsDir, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name))) {
    if (!d.isDirectory()) continue;
    const dir = join(pluginsDir, d.name);
    const file = join(dir, 'plugin.yaml');
    if (!existsSync(file)) continue;
    const manifest = await readManifest(file);
    const code = await loadCode(dir);
    out.push({ manifest, dir, models: [...manifest.models, ...(code?.models ?? [])] });
  }
  return out;
}

/** Registers the models of every enabled plugin. A broken plugin is logged and skipped. */
export async function loadPlugins(pluginsDir: string, registry: Registry, log: Logger): Promise<LoadedPlugin[]> {
  let plugins: LoadedPlugin[];
  try {
    plugins = await discoverPlugins(pluginsDir);
  } catch (e) {
    log.error({ err: (e as Error).message }, 'cannot read plugins');
    return [];
  }
  const started: LoadedPlugin[] = [];
  for (const p of plugins) {
    if (!p.manifest.enabled) {
      log.info({ plugin: p.manifest.name }, 'plugin disabled by its manifest');
      continue;
    }
    try {
      for (const decl of p.models) {
        await registry.register(decl, {
          plugin: p.manifest.name,
          onProgress: ({ index, processed }) => log.info({ plugin: p.manifest.name, index, processed }, 'building index'),
        });
      }
      started.push(p);
      log.info({ plugin: p.manifest.name, models: p.models.length }, 'plugin started');
    } catch (e) {
      const message = e instanceof PluginError || e instanceof Error ? e.message : String(e);
      log.error({ plugin: p.manifest.name, err: message }, 'plugin failed to start');
    }
  }
  return started;
}
