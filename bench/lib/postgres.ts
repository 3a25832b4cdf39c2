/**
 * A throw-away PostgreSQL cluster for the Parse comparison (bench/lib/parse-bench.ts): initdb into
 * a temporary directory, `postgres` on a free loopback port (trust authentication, Unix socket in
 * the same directory), stopped and removed by `stop()`. Uses the installed PostgreSQL binaries
 * (`pg_config --bindir`, else /usr/lib/postgresql/<newest>/bin, else PATH). PostgreSQL refuses to
 * run as root: as root the commands run as the `postgres` user through `runuser`.
 *
 * Runs with synchronous_commit=off: like the embedded store's SQLite WAL with synchronous=NORMAL,
 * a commit does not wait for its flush (a crash can lose the last commits, never consistency).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { chown, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../scripts/ferretdb.js';

export interface PostgresInstance {
  /** postgres://postgres@127.0.0.1:<port>/postgres */
  url: string;
  /** The postmaster's pid (its backends are its children). */
  pid: number;
  version: string;
  stop(): Promise<void>;
}

function binDir(): string | undefined {
  try {
    const d = execFileSync('pg_config', ['--bindir'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    if (existsSync(join(d, 'initdb'))) return d;
  } catch {
    // no pg_config
  }
  const base = '/usr/lib/postgresql';
  if (existsSync(base)) {
    const v = readdirSync(base).filter((x) => existsSync(join(base, x, 'bin', 'initdb'))).sort((a, b) => Number(b) - Number(a))[0];
    if (v) return join(base, v, 'bin');
  }
  return undefined;
}


export async function startPostgres(): Promise<PostgresInstance> {
  const dir = binDir();
  const bin = (name: string) => (dir ? join(dir, name) : name);
  const asRoot = process.getuid?.() === 0;
  const cmd = (name: string, args: string[]): [string, string[]] => (asRoot ? ['runuser', ['-u', 'postgres', '--', bin(name), ...args]] : [bin(name), args]);
  let version: string;
  try {
    version = execFileSync(bin('postgres'), ['--version'], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error('PostgreSQL is not installed (no postgres binary); the embedded-vs-Parse-on-PostgreSQL pair is skipped');
  }
  const tmp = await mkdtemp(join(tmpdir(), 'svc-bench-pg-'));
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    await chown(tmp, uid, gid);
  }
  const data = join(tmp, 'data');
  const [c, a] = cmd('initdb', ['-D', data, '--auth=trust', '-U', 'postgres', '-E', 'UTF8', '--no-sync']);
  execFileSync(c, a, { stdio: ['ignore', 'ignore', 'pipe'] });
  const port = await freePort();
  const [pc, pa] = cmd('postgres', ['-D', data, '-k', tmp, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'synchronous_commit=off', '-c', 'max_connections=200']);
  const proc: ChildProcess = spawn(pc, pa, { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  proc.stderr!.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-4000)));
  const exited = new Promise<void>((res) => proc.once('exit', () => res()));
  const stop = async () => {
    const pid = await postmasterPid(data).catch(() => undefined);
    if (pid) {
      try {
        process.kill(pid, 'SIGINT'); // fast shutdown
      } catch {
        // gone
      }
    }
    const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
    await rm(tmp, { recursive: true, force: true });
  };
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (log.includes('ready to accept connections')) break;
    if (proc.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`PostgreSQL did not start: ${log}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const pid = await postmasterPid(data);
  return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, pid, version, stop };
}

/** The first line of postmaster.pid is the postmaster's pid (through runuser it is not our child). */
async function postmasterPid(data: string): Promise<number> {
  const text = await readFile(join(data, 'postmaster.pid'), 'utf8');
  return Number(text.split('\n')[0]);
}
