/**
 * Plugin authors type their code with `svc-gateway/plugin` (package.json `exports`,
 * src/plugins/public-types.ts). The README guide's TypeScript entry is compiled with tsc twice:
 * inside this repository (the import resolves to the sources) and in a consumer project that
 * unpacked the package `npm pack` makes (the import resolves to the declarations in dist/). A file
 * with three mistakes shows the types are real (not `any`): tsc reports exactly those. The same
 * entry then runs in a gateway, on both stores.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { call, startTestGateway, STORES } from '../helpers/gateway.js';
import { pluginsDir, waitPhase } from './fixtures.js';

const run = promisify(execFile);
const root = join(import.meta.dirname, '../..');
const TSC = join(root, 'node_modules/typescript/bin/tsc');

/** The README guide's blocks: the `ts` one (the typed entry) and plugin.yaml. */
async function guideFiles(): Promise<{ indexTs: string; pluginYaml: string }> {
  const text = await readFile(join(root, 'README.md'), 'utf8');
  const start = text.indexOf('### Writing a plugin');
  const guide = text.slice(start, text.indexOf('\n## ', start));
  const blocks = [...guide.matchAll(/```(\w+)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1]!, body: m[2]! }));
  const ts = blocks.filter((b) => b.lang === 'ts');
  expect(ts).toHaveLength(1);
  expect(ts[0]!.body).toContain("from 'svc-gateway/plugin'");
  return { indexTs: ts[0]!.body, pluginYaml: blocks.find((b) => b.body.startsWith('# plugins/notes/plugin.yaml'))!.body };
}

/** Three mistakes the types must catch. */
const BAD = `import type { PluginCode } from 'svc-gateway/plugin';
export default {
  routes: [{ method: 'GET', path: '/apis/notes.example.com/v1/x', handler: async (_request, ctx) => Response.json(ctx.nope) }],
  start: async (ctx) => ctx.privileged.remove('notes', 'n1'),
  stopp: () => undefined,
} satisfies PluginCode;
`;
const EXPECTED = [
  /bad\.ts.*Property 'nope' does not exist on type 'PluginRouteContext'/,
  /bad\.ts.*Property 'remove' does not exist on type 'ModelClient'/,
  /bad\.ts.*'stopp' does not exist in type 'PluginCode'/,
];

/** tsc's diagnostics (one per line) for a project; `[]` when it compiles. */
async function tsc(args: string[], cwd = root): Promise<{ errors: string[]; stdout: string }> {
  try {
    const { stdout } = await run(process.execPath, [TSC, '--pretty', 'false', ...args], { cwd, maxBuffer: 64 << 20 });
    return { errors: [], stdout };
  } catch (e) {
    const stdout = (e as { stdout?: string }).stdout ?? '';
    if (!stdout) throw e;
    return { errors: stdout.split('\n').filter((l) => /error TS\d+/.test(l)), stdout };
  }
}

function expectOnlyTheMistakes(errors: string[]): void {
  expect(errors.filter((l) => !l.startsWith('bad.ts')), errors.join('\n')).toEqual([]);
  for (const re of EXPECTED) expect(errors.some((l) => re.test(l)), `${re} in\n${errors.join('\n')}`).toBe(true);
  expect(errors).toHaveLength(EXPECTED.length);
}

const cleanup: string[] = [];
afterAll(async () => {
  for (const dir of cleanup) await rm(dir, { recursive: true, force: true });
});

describe('svc-gateway/plugin: types for plugin authors', () => {
  it('a TypeScript plugin inside the repository compiles against the sources (the README entry), and its mistakes are caught', async () => {
    const { indexTs } = await guideFiles();
    // Inside the package, so `svc-gateway/plugin` is a self-reference (tsconfig customConditions).
    const dir = await mkdtemp(join(root, 'test/plugins/.typed-'));
    cleanup.push(dir);
    await writeFile(join(dir, 'index.ts'), indexTs);
    await writeFile(join(dir, 'bad.ts'), BAD);
    await writeFile(join(dir, 'tsconfig.json'), JSON.stringify({ extends: '../../../tsconfig.json', include: ['*.ts'], exclude: [] }));
    expectOnlyTheMistakes((await tsc(['-p', dir], dir)).errors);
  }, 300_000);

  it('a consumer who installs the packed package gets the declarations from dist/', async () => {
    const { indexTs } = await guideFiles();
    const tmp = await mkdtemp(join(tmpdir(), 'svc-consumer-'));
    cleanup.push(tmp);
    // The package as `npm pack` sees it after `npm run build`: the declarations tsconfig.build.json emits.
    const pkg = join(tmp, 'pkg');
    await mkdir(pkg);
    for (const f of ['package.json', '.npmignore', '.gitignore']) if (existsSync(join(root, f))) await cp(join(root, f), join(pkg, f));
    const build = await tsc(['-p', join(root, 'tsconfig.build.json'), '--emitDeclarationOnly', '--sourceMap', 'false', '--outDir', join(pkg, 'dist')]);
    expect(build.errors).toEqual([]);
    await run('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', tmp], { cwd: pkg });
    const tarball = (await readdir(tmp)).find((f) => f.endsWith('.tgz'))!;
    // The consumer: the package unpacked where npm would put it, its dependencies beside it.
    const consumer = join(tmp, 'consumer');
    const installed = join(consumer, 'node_modules/svc-gateway');
    await mkdir(installed, { recursive: true });
    await run('tar', ['-xzf', join(tmp, tarball), '-C', installed, '--strip-components=1']);
    await symlink(join(root, 'node_modules'), join(installed, 'node_modules'));
    await symlink(join(root, 'node_modules/@types'), join(consumer, 'node_modules/@types'));
    await writeFile(join(consumer, 'index.ts'), indexTs);
    await writeFile(join(consumer, 'bad.ts'), BAD);
    await writeFile(
      join(consumer, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', lib: ['ES2023'], types: ['node'], strict: true, skipLibCheck: true, noEmit: true },
        include: ['*.ts'],
      }),
    );
    const { errors, stdout } = await tsc(['--listFiles', '-p', consumer], consumer);
    expect(stdout).toContain(join(installed, 'dist/plugins/public-types.d.ts'));
    expect(stdout).not.toContain(join(installed, 'src/'));
    expectOnlyTheMistakes(errors);
  }, 300_000);

  for (const kind of STORES) {
    it(`the README's typed entry runs in a gateway (${kind})`, async () => {
      const { indexTs, pluginYaml } = await guideFiles();
      const dir = await pluginsDir();
      cleanup.push(dir.dir);
      await dir.write('notes', { 'plugin.yaml': pluginYaml, 'index.ts': indexTs });
      const gw = await startTestGateway(kind, { pluginsDir: dir.dir });
      try {
        await waitPhase(gw, 'notes', 'STARTED');
        const created = await call(gw, 'POST', '/apis/notes.example.com/v1/notes', { metadata: { name: 'n1' }, spec: { title: 'Call Ada', notebook: 'work' } });
        expect(created.status).toBe(201);
        const summary = await call(gw, 'GET', '/apis/console.api.notes.example.com/v1/notebooks/work/summary');
        expect(summary).toMatchObject({ status: 200, body: { notebook: 'work', notes: 1 } });
        const count = await call(gw, 'POST', '/graphql', { query: '{ notesCount }' });
        expect(count.body).toEqual({ data: { notesCount: 1 } });
      } finally {
        await gw.dispose();
      }
    }, 60_000);
  }
});
