/**
 * Real processes for the hardening figures: a FerretDB that can be paused (SIGSTOP), killed and
 * started again on the same port and data, and gateway processes (`node --import tsx
 * src/cli.ts`, so a signal reaches the gateway itself) that can be killed with SIGKILL.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ensureFerretdb, freePort } from '../../scripts/ferretdb.js';

export { freePort };
import { ADMIN } from '../helpers/gateway.js';
import { auditChildOutput } from '../setup/secret-audit.js';

const ROOT = resolve(import.meta.dirname, '../..');


const exited = (child: ChildProcess) =>
  child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve()
    : new Promise<void>((r) => child.once('exit', () => r()));

async function until(check: () => Promise<boolean>, timeoutMs: number, what: string, failed = () => false): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (failed()) throw new Error(`${what} exited`);
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what} not ready within ${timeoutMs} ms`);
}

export interface OwnFerret {
  url(database: string): string;
  start(): Promise<void>;
  signal(sig: NodeJS.Signals): void;
  /**
   * SIGSTOP, resolved once the kernel reports the process stopped (state `T` in
   * /proc/<pid>/stat): the signal is delivered asynchronously, and a request sent at once could
   * still be answered.
   */
  pause(): Promise<void>;
  stop(): Promise<void>;
  dispose(): Promise<void>;
}

/**
 * A FerretDB of this test file's own (the shared one must not be paused or killed). `extraArgs`
 * go to its command line (e.g. `--repl-set-name=rs0`).
 */
export async function ownFerret(extraArgs: string[] = []): Promise<OwnFerret> {
  const bin = await ensureFerretdb();
  const dir = await mkdtemp(join(tmpdir(), 'svc-own-ferret-'));
  const port = await freePort();
  let child: ChildProcess | undefined;
  const self: OwnFerret = {
    url: (database) => `mongodb://127.0.0.1:${port}/${database}`,
    async start() {
      child = spawn(
        bin,
        ['--handler=sqlite', `--sqlite-url=file:${dir}/`, `--listen-addr=127.0.0.1:${port}`, `--state-dir=${dir}`, '--debug-addr=-', '--telemetry=disable', '--log-level=error', ...extraArgs],
        { stdio: 'ignore' },
      );
      // Our own process must be the one that answers: when another run took the port between
      // freePort() and the spawn, ours exits, and a probe would reach (and SIGSTOP miss) theirs.
      const ours = child;
      let exitCode: number | null = null;
      ours.once('exit', (code) => (exitCode = code ?? -1));
      await until(
        () =>
          new Promise<boolean>((res) => {
            const s = connect(port, '127.0.0.1', () => {
              s.destroy();
              res(true);
            });
            s.on('error', () => res(false));
          }),
        30_000,
        'FerretDB',
        () => exitCode !== null,
      );
      await new Promise((r) => setTimeout(r, 300));
      if (exitCode !== null) throw new Error(`FerretDB exited (${exitCode}): port ${port} answers for another process`);
    },
    signal(sig) {
      child?.kill(sig);
    },
    async pause() {
      const pid = child?.pid;
      if (pid === undefined) throw new Error('FerretDB is not running');
      child!.kill('SIGSTOP');
      await until(
        async () => {
          const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
          // "pid (comm) state …": the state follows the last ')'.
          return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'T';
        },
        5_000,
        'FerretDB stopped',
      );
    },
    async stop() {
      if (!child) return;
      child.kill('SIGCONT');
      child.kill('SIGKILL');
      await exited(child);
      child = undefined;
    },
    async dispose() {
      await self.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
  await self.start();
  return self;
}


export interface GatewayProcess {
  url: string;
  child: ChildProcess;
  kill(sig?: NodeJS.Signals): Promise<void>;
}

/** Starts `src/cli.ts` in its own process; resolves when /healthz answers 200. */
export async function spawnGateway(
  env: { MONGODB_URL?: string; SVC_DATA_DIR?: string; SVC_PLUGINS_DIR?: string; NODE_OPTIONS?: string } & Record<`SVC_${string}`, string | undefined>,
): Promise<GatewayProcess> {
  const { MONGODB_URL: _m, SVC_DATA_DIR: _d, SVC_PLUGINS_DIR: _p, ...limits } = env; // SVC_* limits, NODE_OPTIONS
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      SVC_ADMIN_USERNAME: ADMIN.username,
      SVC_ADMIN_PASSWORD: ADMIN.password,
      LOG_LEVEL: 'trace',
      SVC_PLUGINS_DIR: env.SVC_PLUGINS_DIR ?? join(ROOT, 'plugins'),
      ...(env.MONGODB_URL ? { MONGODB_URL: env.MONGODB_URL } : { MONGODB_URL: '' }),
      ...(env.SVC_DATA_DIR ? { SVC_DATA_DIR: env.SVC_DATA_DIR } : {}),
      ...limits,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // Everything the process prints goes through the whole-run secret audit.
  auditChildOutput('gateway process', child.stdout, child.stderr);
  const url = `http://127.0.0.1:${port}`;
  let gone = false;
  void exited(child).then(() => (gone = true));
  await until(
    async () => (await fetch(`${url}/healthz`)).status === 200,
    60_000,
    'gateway process',
    () => gone,
  );
  return {
    url,
    child,
    async kill(sig = 'SIGTERM') {
      child.kill(sig);
      await exited(child);
    },
  };
}

export const tempDir = () => mkdtemp(join(tmpdir(), 'svc-hard-'));
