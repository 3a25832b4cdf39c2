/**
 * A plugin's `status.reason` names files relative to the plugin folder (`plugin.yaml`,
 * `index.mjs`, `extensions/roles.yaml`), never by absolute path: the reason is readable through
 * the API, and where the gateway keeps its plugins on disk is nobody's business there.
 */
import { resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * `text` with every mention of the plugin folder `dir` — as given, absolute, or as a `file:`
 * URL (module loader messages) — made relative to it (the folder itself becomes `.`).
 */
export function relativeToPlugin(dir: string, text: string): string {
  const abs = resolve(dir);
  // Longest first, so a file URL is not half-replaced by its path.
  const forms = [...new Set([pathToFileURL(abs).href, abs, dir])].sort((a, b) => b.length - a.length);
  const separators = escape(sep === '/' ? '/' : `${sep}/`);
  const within = new RegExp(`(?:${forms.map(escape).join('|')})[${separators}]`, 'g');
  const itself = new RegExp(`(?:${forms.map(escape).join('|')})(?![\\w.-])`, 'g');
  return (
    text
      .replace(within, '')
      .replace(itself, '.')
      // The cache-busting query the code loader puts on module URLs means nothing to a reader.
      .replace(/(\.(?:m?js|ts))\?t=\d+(?:&ts=1)?/g, '$1')
  );
}
