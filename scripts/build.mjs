/**
 * `npm run build` (also run by `npm ci` through `prepare`): compiles src/ to JavaScript in dist/
 * with tsc and copies the files tsc does not emit (the platform plugins' YAML), so `npm start`
 * runs `node dist/cli.js` with no loader between the supervisor and the server.
 * Plain JavaScript on purpose: it runs before anything is built.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
const dist = join(root, 'dist');

let tsc;
try {
  tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
} catch {
  // `npm ci --omit=dev` (a production image that copies a built dist/): nothing to build with.
  console.warn(`build: typescript is not installed; dist/ ${existsSync(dist) ? 'kept as it is' : 'is missing: run npm ci, then npm run build'}`);
  process.exit(0);
}
rmSync(dist, { recursive: true, force: true });
const run = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { cwd: root, stdio: 'inherit' });
if (run.status !== 0) process.exit(run.status ?? 1);

// Everything under src/ that is not TypeScript (plugin manifests, role templates), except docs.
cpSync(join(root, 'src'), dist, {
  recursive: true,
  filter: (src) => !/\.(ts|md)$/.test(src),
});
