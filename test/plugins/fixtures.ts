/** Plugin folders written on the fly for the plugin tests, and small waiting helpers. */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { expect } from 'vitest';
import { adminAuth, call } from '../helpers/gateway.js';

export const auth = { authorization: adminAuth };
export const PLUGINS = '/apis/plugin.svc.run/v1alpha1/plugins';

export interface PluginsDir {
  dir: string;
  /** Writes `files` (relative path → text) under `<dir>/<plugin>/`. */
  write(plugin: string, files: Record<string, string>): Promise<void>;
  remove(): Promise<void>;
}

export async function pluginsDir(): Promise<PluginsDir> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-plugins-'));
  return {
    dir,
    async write(plugin, files) {
      for (const [rel, text] of Object.entries(files)) {
        const path = join(dir, plugin, rel);
        await mkdir(dirname(path), { recursive: true });
        await writeFile(path, text);
      }
    },
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

/** A plugin.yaml with one model `<Kind>` in `group` (indexes as YAML lines, 8-space indented). */
export function manifest(opts: {
  name: string;
  group?: string;
  kind?: string;
  version?: string;
  requires?: string[];
  enabled?: boolean;
  indexes?: string[];
  noModel?: boolean;
}): string {
  const group = opts.group ?? `${opts.name}.example.com`;
  const kind = opts.kind ?? 'Thing';
  const lines = [
    'apiVersion: plugin.svc.run/v1alpha1',
    'kind: Plugin',
    'metadata:',
    `  name: ${opts.name}`,
    'spec:',
    `  version: ${opts.version ?? '1.0.0'}`,
  ];
  if (opts.requires) lines.push(`  requires: [${opts.requires.join(', ')}]`);
  if (opts.enabled !== undefined) lines.push(`  enabled: ${opts.enabled}`);
  if (!opts.noModel) {
    lines.push(
      '  models:',
      `    - group: "${group}"`,
      '      version: v1',
      `      kind: ${kind}`,
      '      schema:',
      '        properties:',
      '          spec:',
      '            type: object',
      '            properties:',
      '              title: { type: string }',
      '              n: { type: integer }',
    );
    if (opts.indexes?.length) lines.push('      indexes:', ...opts.indexes.map((l) => `        - ${l}`));
  }
  return lines.join('\n') + '\n';
}

/** The Plugin object of `name`. */
export async function plugin(gw: { url: string }, name: string): Promise<any> {
  const res = await call(gw, 'GET', `${PLUGINS}/${name}`, undefined, auth);
  expect(res.status).toBe(200);
  return res.body;
}

/** Polls until `check` passes (it throws otherwise); fails after `ms`. */
export async function eventually<T>(check: () => Promise<T>, ms = 15000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    try {
      return await check();
    } catch (e) {
      if (Date.now() > until) throw e;
      await new Promise((r) => setTimeout(r, 25));
    }
  }
}

export async function phaseOf(gw: { url: string }, name: string): Promise<string> {
  return (await plugin(gw, name)).status?.phase;
}

export async function waitPhase(gw: { url: string }, name: string, phase: string): Promise<any> {
  return eventually(async () => {
    const p = await plugin(gw, name);
    expect(p.status?.phase).toBe(phase);
    return p;
  });
}
