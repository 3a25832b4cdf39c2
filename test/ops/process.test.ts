/**
 * The real process (docs/API.md §1, §10): `node dist/cli.js` as a supervisor runs it, and `npm start`
 * once. Exit codes and the one-line messages of the command line, a failed start (port in use,
 * MongoDB unreachable), the first administrator's password across a failed start, and SIGTERM
 * with open watches and a request in flight, a second signal, and npm's forwarding.
 *
 * dist/ is built once here when it is older than src/ (`npm ci` builds it through `prepare`).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { ADMIN, adminAuth, basicAuth, call } from '../helpers/gateway.js';
import { freePort } from '../hardening/processes.js';
import { auditText } from '../setup/secret-audit.js';
import { PERSONS, sleep, slowCreate } from '../watch/helpers.js';

const ROOT = resolve(import.meta.dirname, '../..');
const CLI = join(ROOT, 'dist/cli.js');
const PERMISSIONS = '/apis/api.console.svc.run/v1alpha1/users/-/permissions';
/** Per test: a few process starts on a loaded 2-core machine. */
const PROCESS_TIMEOUT = 150_000;
/** The one line that may carry a password: the banner of a generated one. */
const BANNER = /^svc gateway: generated password for "([^"]+)": (\S+)$/;

function newestMtime(dir: string): number {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    newest = Math.max(newest, e.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs);
  }
  return newest;
}

function ensureBuilt(): void {
  let built = 0;
  try {
    built = statSync(CLI).mtimeMs;
  } catch {
    // not built yet
  }
  const sources = Math.max(newestMtime(join(ROOT, 'src')), statSync(join(ROOT, 'scripts/build.mjs')).mtimeMs);
  if (built > sources) return;
  const run = spawnSync(process.execPath, ['scripts/build.mjs'], { cwd: ROOT, encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`npm run build failed:\n${run.stdout}${run.stderr}`);
}

interface Proc {
  child: ChildProcess;
  stdout: string[];
  stderr: string[];
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Collects a stream's lines; every line but the password banner goes through the secret audit. */
function lines(stream: NodeJS.ReadableStream | null, into: string[], name: string): void {
  let partial = '';
  stream?.setEncoding('utf8');
  stream?.on('data', (chunk: string) => {
    const all = (partial + chunk).split('\n');
    partial = all.pop()!;
    for (const line of all) {
      into.push(line);
      if (!BANNER.test(line)) auditText(`${name} output`, line);
    }
  });
  stream?.on('end', () => {
    if (partial) {
      into.push(partial);
      if (!BANNER.test(partial)) auditText(`${name} output`, partial);
    }
  });
}

function run(command: string, args: string[], env: Record<string, string | undefined>, detached = false): Proc {
  const child = spawn(command, args, {
    cwd: ROOT,
    detached,
    env: { ...process.env, MONGODB_URL: '', LOG_LEVEL: 'warn', SVC_PLUGINS_DIR: join(ROOT, 'plugins'), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const proc: Proc = {
    child,
    stdout: [],
    stderr: [],
    exit: new Promise((res) => child.once('exit', (code, signal) => res({ code, signal }))),
  };
  lines(child.stdout, proc.stdout, command);
  lines(child.stderr, proc.stderr, command);
  return proc;
}

const cli = (args: string[], env: Record<string, string | undefined> = {}) => run(process.execPath, [CLI, ...args], env);

async function waitReady(url: string, proc: Proc, ms = 90_000): Promise<void> {
  let exited = false;
  void proc.exit.then(() => (exited = true));
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (exited) throw new Error(`the gateway exited: ${proc.stderr.join('\n')}`);
    if (await fetch(`${url}/healthz`).then((r) => r.status === 200, () => false)) return;
    await sleep(100);
  }
  throw new Error('the gateway did not become ready');
}

async function exitWithin(proc: Proc, ms: number) {
  return Promise.race([proc.exit, sleep(ms).then(() => Promise.reject(new Error(`no exit within ${ms} ms`)))]);
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Holds a port, as another program would. */
async function holdPort(): Promise<{ port: number; release(): Promise<void> }> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  return { port: (srv.address() as { port: number }).port, release: () => new Promise((r) => srv.close(() => r())) };
}

const dirs: string[] = [];
const tempDir = async () => {
  const d = await mkdtemp(join(tmpdir(), 'svc-proc-'));
  dirs.push(d);
  return d;
};
const running: Proc[] = [];
const started = (p: Proc) => (running.push(p), p);

beforeAll(() => ensureBuilt(), 180_000);
afterAll(async () => {
  for (const p of running) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('the command line', { timeout: PROCESS_TIMEOUT }, () => {
  it('--help prints every option with its environment variable and default, exit 0', async () => {
    const p = cli(['--help']);
    expect((await exitWithin(p, 30_000)).code).toBe(0);
    const text = p.stdout.join('\n');
    for (const [flag, env, def] of [
      ['--port', 'PORT', '8090'],
      ['--host', 'HOST', '127.0.0.1'],
      ['--data-dir', 'SVC_DATA_DIR', './data'],
      ['--mongodb-url', 'MONGODB_URL', undefined],
      ['--plugins-dir', 'SVC_PLUGINS_DIR', './plugins'],
      ['--log-level', 'LOG_LEVEL', 'info'],
    ] as const) {
      const line = p.stdout.find((l) => l.includes(flag));
      expect(line, flag).toBeDefined();
      expect(line).toContain(env);
      if (def) expect(line).toContain(`(default: ${def})`);
    }
    for (const env of ['SVC_ADMIN_USERNAME', 'SVC_ADMIN_PASSWORD', 'SVC_STORE_TIMEOUT_MS']) expect(text).toContain(env);
    expect(p.stderr.join('')).toBe('');
  });

  it.each([
    [['--bogus'], {}, /unknown option --bogus/],
    [['--port', 'abc'], {}, /invalid --port "abc"/],
    [['--port', '70000'], {}, /invalid --port "70000"/],
    [['--port'], {}, /--port/],
    [['stray'], {}, /unexpected argument stray/],
    [['--log-level', 'loud'], {}, /invalid --log-level "loud"/],
    [[], { PORT: 'abc' }, /invalid PORT "abc"/],
    [[], { MONGODB_URL: 'postgres://x' }, /invalid MONGODB_URL/],
  ] as Array<[string[], Record<string, string>, RegExp]>)('%j %j: exit 2 with one line', async (args, env, message) => {
    const p = cli(args, env);
    expect((await exitWithin(p, 30_000)).code).toBe(2);
    expect(p.stderr).toHaveLength(1);
    expect(p.stderr[0]).toMatch(message);
    expect(p.stderr[0]).toMatch(/^svc gateway: /);
    expect(p.stdout).toEqual([]);
  });

  it('an unreachable MongoDB: exit 1 within seconds, one line naming host:port, no credentials', async () => {
    const port = await freePort(); // closed
    const p = cli(['--port', String(await freePort())], { MONGODB_URL: `mongodb://someone:not-a-secret-pw@127.0.0.1:${port}/db` });
    const t0 = Date.now();
    expect((await exitWithin(p, 60_000)).code).toBe(1);
    expect(Date.now() - t0).toBeLessThan(45_000); // 5 s of server selection; the rest is a loaded machine
    expect(p.stderr).toHaveLength(1);
    expect(p.stderr[0]).toContain(`MongoDB unreachable at 127.0.0.1:${port}`);
    expect(p.stderr[0]).not.toContain('not-a-secret-pw');
  });
});

describe('the first administrator password', { timeout: PROCESS_TIMEOUT }, () => {
  it('is printed before a failed start (port in use) and at every later start until changed', async () => {
    const dataDir = await tempDir();
    const held = await holdPort();
    const env = { SVC_DATA_DIR: dataDir, SVC_ADMIN_PASSWORD: '', SVC_ADMIN_USERNAME: 'root' };
    let p = cli(['--port', String(held.port)], env);
    expect((await exitWithin(p, 90_000)).code).toBe(1);
    await held.release();
    expect(p.stderr).toHaveLength(1);
    expect(p.stderr[0]).toMatch(new RegExp(`^svc gateway: cannot listen on 127\\.0\\.0\\.1:${held.port}: the address is already in use`));
    const first = p.stdout.map((l) => BANNER.exec(l)).find(Boolean);
    expect(first?.[1]).toBe('root');
    const password = first![2]!;

    // The next start prints the same password, and it works.
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    p = started(cli(['--port', String(port)], env));
    await waitReady(url, p);
    expect(p.stdout.map((l) => BANNER.exec(l)?.[2]).filter(Boolean)).toEqual([password]);
    const root = { authorization: basicAuth('root', password) };
    expect((await call({ url }, 'GET', PERMISSIONS, undefined, root)).status).toBe(200);

    // Changed: later starts print none.
    const changed = await call({ url }, 'PATCH', '/api/v1alpha1/users/root', { spec: { password: 'a-new-root-password' } }, {
      ...root,
      'content-type': 'application/merge-patch+json',
    });
    expect(changed.status).toBe(200);
    p.child.kill('SIGTERM');
    expect((await exitWithin(p, 30_000)).code).toBe(0);
    p = started(cli(['--port', String(port)], env));
    await waitReady(url, p);
    p.child.kill('SIGTERM');
    expect((await exitWithin(p, 30_000)).code).toBe(0);
    expect(p.stdout.some((l) => l.includes('generated password'))).toBe(false);
  });
});

describe('signals', { timeout: PROCESS_TIMEOUT }, () => {
  let dataDir: string;
  beforeAll(async () => {
    dataDir = await tempDir();
  });
  const env = () => ({ SVC_DATA_DIR: dataDir, SVC_ADMIN_USERNAME: ADMIN.username, SVC_ADMIN_PASSWORD: ADMIN.password });

  it('SIGTERM: watches close with 1001, the request in flight finishes, exit 0', async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const p = started(cli(['--port', String(port)], env()));
    await waitReady(url, p);
    const ws = new WebSocket(`ws://127.0.0.1:${port}${PERSONS}`, { headers: { authorization: adminAuth } });
    const closed = new Promise<[number, string]>((r) => ws.on('close', (code, reason) => r([code, String(reason)])));
    await new Promise((r, j) => (ws.once('open', r), ws.once('error', j)));
    const slow = slowCreate({ url }, `slow-${port}`);
    await sleep(300);

    p.child.kill('SIGTERM');
    expect(await closed).toEqual([1001, 'server shutting down']);
    await sleep(200);
    expect(p.child.exitCode).toBeNull(); // still waiting for the request in flight
    slow.finish();
    expect((await slow.response).status).toBe(201);
    expect(await exitWithin(p, 15_000)).toEqual({ code: 0, signal: null });
  });

  it('a second signal exits at once, non-zero', async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const p = started(cli(['--port', String(port)], env()));
    await waitReady(url, p);
    const slow = slowCreate({ url }, `never-${port}`);
    await sleep(300);
    p.child.kill('SIGINT');
    const end = Date.now() + 10_000;
    while (!p.stderr.some((l) => l.includes('shutting down')) && Date.now() < end) await sleep(20);
    const t0 = Date.now();
    p.child.kill('SIGINT');
    const { code } = await exitWithin(p, 5000).catch((e) => { throw new Error(`${e.message}: ${p.stderr.join(' / ')} ${p.stdout.join(' / ')}`); });
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(code).toBe(130);
    await expect(slow.response).rejects.toThrow();
  });

  it('SIGTERM to `npm start` stops the server too: no process is left behind', async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const p = started(run('npm', ['start', '--silent', '--', '--port', String(port), '--log-level', 'info'], env()));
    await waitReady(url, p);
    // The server's own pid, from its log line (pino writes it in every line).
    const pid = p.stdout.map((l) => /"pid":(\d+)/.exec(l)?.[1]).find(Boolean);
    expect(pid).toBeDefined();
    expect(Number(pid)).not.toBe(p.child.pid);
    try {
      p.child.kill('SIGTERM');
      await exitWithin(p, 15_000);
      const end = Date.now() + 10_000;
      while (alive(Number(pid)) && Date.now() < end) await sleep(50);
      expect(alive(Number(pid))).toBe(false);
      await expect(fetch(`${url}/healthz`)).rejects.toThrow();
    } finally {
      if (alive(Number(pid))) process.kill(Number(pid), 'SIGKILL'); // an orphan, should this fail
    }
  });

  it('Ctrl-C under `npm start` (the terminal\'s SIGINT, then npm\'s forwarded copy) shuts down gracefully', async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const p = started(run('npm', ['start', '--silent', '--', '--port', String(port), '--log-level', 'info'], env()));
    await waitReady(url, p);
    const pid = Number(p.stdout.map((l) => /"pid":(\d+)/.exec(l)?.[1]).find(Boolean));
    // What a terminal does to the process group, in the order that makes two signals reach the
    // server (sent to the group at once, the kernel may merge them into one).
    process.kill(pid, 'SIGINT');
    process.kill(p.child.pid!, 'SIGINT');
    const { code } = await exitWithin(p, 15_000);
    expect(code).toBe(0);
    expect(p.stderr.filter((l) => l.includes('shutting down'))).toHaveLength(1);
    expect(p.stderr.join('\n')).not.toContain('stopping at once');
  });
});
