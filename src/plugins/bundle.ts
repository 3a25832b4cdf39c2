/**
 * Bundle objects (docs/API.md §7): every `*.yaml`/`*.yml` file in
 * `extensions/` and `src/main/resources/extensions/`, each holding one or more YAML documents.
 * A document's type is decided only by its `apiVersion` and `kind`, whatever the file is called.
 */
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import yaml from 'js-yaml';
import { isPlainObject } from '../store/object.js';
import { PluginError } from './manifest.js';
import type { DocumentSource } from './rules.js';

export const BUNDLE_DIRS = ['extensions', join('src', 'main', 'resources', 'extensions')];

export interface BundleDocument {
  source: DocumentSource;
  object: Record<string, unknown> & { apiVersion: string; kind: string };
}

/** Reads every bundle document of the plugin in `dir` (files in name order, documents in file order). */
export async function readBundle(dir: string): Promise<BundleDocument[]> {
  const out: BundleDocument[] = [];
  for (const sub of BUNDLE_DIRS) {
    const folder = join(dir, sub);
    if (!existsSync(folder)) continue;
    const files = (await readdir(folder, { withFileTypes: true }))
      .filter((f) => f.isFile() && /\.ya?ml$/i.test(f.name))
      .map((f) => f.name)
      .sort();
    for (const name of files) {
      const path = join(folder, name);
      const file = relative(dir, path);
      let docs: unknown[];
      try {
        docs = yaml.loadAll(await readFile(path, 'utf8'));
      } catch (e) {
        throw new PluginError(`${file}: invalid YAML: ${(e as Error).message}`);
      }
      docs.forEach((doc, i) => {
        const source = { file, index: i + 1 };
        if (doc === null || doc === undefined) return; // an empty document (e.g. a trailing ---)
        if (!isPlainObject(doc)) throw new PluginError(`${file} document ${i + 1}: not a YAML mapping`);
        if (typeof doc.apiVersion !== 'string' || typeof doc.kind !== 'string') {
          throw new PluginError(`${file} document ${i + 1}: apiVersion and kind are required`);
        }
        out.push({ source, object: doc as BundleDocument['object'] });
      });
    }
  }
  return out;
}
