/**
 * The README's plugin authoring guide works as written: its files (the code blocks whose first
 * line names a path under plugins/notes/) are written as they are, a gateway loads them, and the
 * guide's curl commands run against it with the results the guide states.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { openWatch } from '../watch/helpers.js';
import { auth, plugin, PLUGINS, pluginsDir, waitPhase, type PluginsDir } from './fixtures.js';

const run = promisify(execFile);
const README = new URL('../../README.md', import.meta.url);

/** The guide: from "### Writing a plugin" to the next "## " heading. */
async function guide(): Promise<string> {
  const text = await readFile(README, 'utf8');
  const start = text.indexOf('### Writing a plugin');
  expect(start).toBeGreaterThan(0);
  const end = text.indexOf('\n## ', start);
  return text.slice(start, end);
}

const blocks = (text: string) => [...text.matchAll(/```(\w+)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1]!, body: m[2]! }));

describe('README plugin authoring guide (embedded)', () => {
  let dir: PluginsDir;
  let gw: TestGateway;
  let shell: string[] = [];
  /** Runs one curl line of the guide against the test gateway; returns status and body. */
  const curl = async (line: string, vars: Record<string, string>) => {
    const { stdout } = await run('bash', ['-c', `${line.replace(/\s+#.*$/, '')} -s -w '\\n%{http_code}'`], {
      env: { ...process.env, ...vars, AUTH: `${ADMIN.username}:${ADMIN.password}` },
    });
    const i = stdout.lastIndexOf('\n');
    return { status: Number(stdout.slice(i + 1)), body: stdout.slice(0, i) };
  };
  const local = (s: string) => s.replaceAll('http://127.0.0.1:8090', gw.url);

  beforeAll(async () => {
    const text = await guide();
    dir = await pluginsDir();
    const files: Record<string, string> = {};
    for (const b of blocks(text)) {
      const first = b.body.split('\n')[0]!;
      const path = /^(?:#|\/\/) plugins\/notes\/(\S+)$/.exec(first)?.[1];
      if (path) files[path] = b.body;
      if (b.lang === 'sh') shell.push(...b.body.split('\n').filter((l) => l.startsWith('curl') || /^[A-Z]=/.test(l)));
    }
    expect(Object.keys(files).sort()).toEqual(['extensions/roles.yaml', 'index.mjs', 'plugin.yaml']);
    await dir.write('notes', files);
    gw = await startTestGateway('embedded', { pluginsDir: dir.dir });
  });
  afterAll(async () => {
    await gw?.dispose();
    await dir?.remove();
  });

  it('the plugin starts with its models, index, route and role templates', async () => {
    const p = await plugin(gw, 'notes');
    expect(p.status.phase, p.status.reason).toBe('STARTED');
    expect(p.spec).toMatchObject({ version: '1.0.0', displayName: 'Notes', enabled: true });
  });

  it('the commands of "Use it, and grant access" answer as the guide says', async () => {
    const vars: Record<string, string> = {};
    const lines = shell.map(local);
    const useIt = lines.slice(lines.findIndex((l) => l.startsWith('N=')));
    const results: number[] = [];
    const bodies: string[] = [];
    for (const line of useIt) {
      const assign = /^([A-Z])=(\S+)$/.exec(line);
      if (assign) {
        vars[assign[1]!] = assign[2]!;
        continue;
      }
      const r = await curl(line, vars);
      results.push(r.status);
      bodies.push(r.body);
    }
    expect(results).toEqual([201, 201, 200, 200, 200, 201, 201, 200, 403]);
    expect(JSON.parse(bodies[2]!).items.map((x: any) => x.metadata.name)).toEqual(['work']);
    expect(JSON.parse(bodies[3]!)).toEqual({ notebook: 'work', notes: 1 });
    expect(JSON.parse(bodies[4]!)).toEqual({ data: { notesCount: 1 } });
    expect(JSON.parse(bodies[7]!).total).toBe(1);
  });

  it('the commands of "watch it start" stop and start the plugin, and the watch shows it', async () => {
    const lines = shell.map(local);
    const from = lines.findIndex((l) => l.startsWith('P='));
    const vars = { P: /^P=(\S+)$/.exec(lines[from]!)![1]! };
    const watch = openWatch(gw, '?fieldSelector=metadata.name%3Dnotes', auth, PLUGINS);
    await watch.opened;
    const [get, , stop, start] = lines.slice(from + 1, from + 5);
    expect((await curl(get!, vars)).status).toBe(200);
    expect((await curl(stop!, vars)).status).toBe(200);
    await waitPhase(gw, 'notes', 'STOPPED');
    expect((await curl(start!, vars)).status).toBe(200);
    await waitPhase(gw, 'notes', 'STARTED');
    await watch.until((ev) => ev.filter((e) => e.object?.status?.phase === 'STARTED').length >= 2, 'STARTED twice');
    const phases = watch.events.map((e) => e.object?.status?.phase);
    expect(phases).toEqual(expect.arrayContaining(['STARTED', 'STOPPED', 'STARTING']));
    watch.close();
  });
});
