/**
 * What `npm run schema:print` and `npm run codegen` share: which plugins they describe and where
 * their output goes.
 *
 * `SVC_PLUGINS_DIR` (the gateway's own variable) selects the plugins; unset, or naming the
 * repository's plugins/, the scripts write the repository's generated files (schema/,
 * src/graphql/generated/). Any other folder describes someone else's plugins, so the scripts
 * then refuse to run without `--out`: a team typing its own schema never overwrites the
 * repository's files by accident. Relative paths are taken from the directory npm was run in
 * (INIT_CWD), not from the repository.
 */
import { existsSync, statSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';

export const ROOT = join(import.meta.dirname, '..');
export const REPO_PLUGINS = join(ROOT, 'plugins');

/** A path as the user typed it, from where they typed it. */
export const callerPath = (p: string): string => resolve(process.env.INIT_CWD ?? process.cwd(), p);

/** A refusal: the message on stderr, exit code 2, no stack. */
export function fail(message: string): never {
  console.error(message);
  process.exit(2);
}

/** The plugins folder SVC_PLUGINS_DIR names, and whether it is the repository's own. */
export function pluginsFromEnv(): { dir: string; repo: boolean } {
  const env = process.env.SVC_PLUGINS_DIR;
  if (!env) return { dir: REPO_PLUGINS, repo: true };
  const dir = callerPath(env);
  if (!existsSync(dir) || !statSync(dir).isDirectory()) fail(`SVC_PLUGINS_DIR=${env}: no such folder (${dir})`);
  return { dir, repo: dir === REPO_PLUGINS };
}

/** Refuses other plugins without an explicit output. */
export function requireOut(plugins: { repo: boolean }, out: string | undefined, example: string): void {
  if (!plugins.repo && out === undefined) {
    fail(
      `SVC_PLUGINS_DIR=${process.env.SVC_PLUGINS_DIR} names other plugins than the repository's: give an output file, e.g. ${example}` +
        ' (without it the repository\'s own generated files would be overwritten)',
    );
  }
}

/** Writes `text` to `out` (`-`: standard output). */
export async function writeOut(out: string, text: string): Promise<void> {
  if (out === '-') {
    process.stdout.write(text);
    return;
  }
  const file = callerPath(out);
  await writeFile(file, text);
  console.error(`wrote ${file}`);
}
