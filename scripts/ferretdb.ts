/**
 * FerretDB for tests and benchmarks: builds FerretDB (SQLite handler) once from the Go module
 * proxy into `<repo>/.cache/ferretdb/bin/ferretdb` and starts throw-away instances of it.
 *
 * Why not `go install …@v1.24.2`: it asks the proxy for the module's `@v/list` (deprecation
 * check), which some proxies answer with 403. And a plain `go build` of the downloaded module
 * panics at start ("Invalid build/version/version.txt") because the module zip lacks that
 * file. So we download the module into a scratch module, copy it to a writable directory,
 * write the version file and build there.
 *
 * `FERRETDB_BIN` points at a ready binary and skips the build.
 */
import { spawn, execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { access, constants, cp, mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { MongoClient } from 'mongodb';

export const FERRETDB_VERSION = 'v1.24.2';
const MODULE = 'github.com/FerretDB/FerretDB';

const run = promisify(execFile);
const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const log = (msg: string) => process.stderr.write(`[ferretdb] ${msg}\n`);

/** Where the binary lives: `FERRETDB_BIN`, else the repository's cache directory. */
export function ferretdbBinPath(): string {
  return process.env.FERRETDB_BIN || join(repoRoot, '.cache', 'ferretdb', 'bin', 'ferretdb');
}

const exists = (p: string) =>
  access(p, constants.X_OK).then(
    () => true,
    () => false,
  );

/** Runs a command; on failure the error carries the command and its output. */
async function sh(cmd: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) {
  try {
    return await run(cmd, args, { ...opts, maxBuffer: 64 << 20 });
  } catch (e) {
    const err = e as Error & { stderr?: string; stdout?: string };
    throw new Error(`${cmd} ${args.join(' ')} failed: ${err.message}\n${err.stderr ?? ''}${err.stdout ?? ''}`);
  }
}

async function isRightVersion(bin: string): Promise<boolean> {
  if (!(await exists(bin))) return false;
  const { stdout } = await sh(bin, ['--version']).catch(() => ({ stdout: '' }));
  return stdout.includes(`version: ${FERRETDB_VERSION}`);
}

/**
 * Returns the path of a FerretDB binary, building it first when the cache lacks it.
 * Safe to call from several processes at once: one builds under a lock directory, the others
 * wait for it; the binary appears by an atomic rename.
 */
export async function ensureFerretdb(): Promise<string> {
  const bin = ferretdbBinPath();
  if (process.env.FERRETDB_BIN) {
    if (!(await exists(bin))) throw new Error(`FERRETDB_BIN=${bin} is not an executable file`);
    return bin;
  }
  if (await isRightVersion(bin)) return bin;

  const cache = dirname(dirname(bin));
  await mkdir(dirname(bin), { recursive: true });
  const lock = join(cache, 'build.lock');
  for (;;) {
    try {
      await mkdir(lock); // atomic: whoever creates it builds
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      // Someone else is building. A lock older than 15 minutes is from a dead build.
      const age = await stat(lock).then((s) => Date.now() - s.mtimeMs, () => 0);
      if (age > 15 * 60_000) await rm(lock, { recursive: true, force: true });
      else await new Promise((r) => setTimeout(r, 1000));
      if (await isRightVersion(bin)) return bin;
    }
  }
  try {
    if (await isRightVersion(bin)) return bin;
    await build(bin, cache);
    return bin;
  } finally {
    await rm(lock, { recursive: true, force: true });
  }
}

async function build(bin: string, cache: string): Promise<void> {
  log(`building FerretDB ${FERRETDB_VERSION} into ${bin} (first run only, about 1–2 minutes)…`);
  const started = Date.now();
  const work = await mkdtemp(join(cache, 'build-'));
  try {
    const env = { ...process.env, GOFLAGS: '-mod=mod -buildvcs=false' };
    // A scratch module that depends on FerretDB, so `go mod download` resolves it.
    const scratch = join(work, 'mod');
    await mkdir(scratch);
    await writeFile(join(scratch, 'go.mod'), `module ferretbuild\n\ngo 1.21\n\nrequire ${MODULE} ${FERRETDB_VERSION}\n`);
    await sh('go', ['mod', 'download', `${MODULE}@${FERRETDB_VERSION}`], { cwd: scratch, env });
    const { stdout } = await sh('go', ['mod', 'download', '-json', `${MODULE}@${FERRETDB_VERSION}`], {
      cwd: scratch,
      env,
    });
    const dir = (JSON.parse(stdout) as { Dir?: string }).Dir;
    if (!dir) throw new Error(`go mod download -json gave no Dir: ${stdout}`);

    // The module cache is read-only; build in a writable copy with the missing version file.
    const src = join(work, 'src');
    await cp(dir, src, { recursive: true });
    await sh('chmod', ['-R', 'u+w', src]);
    await mkdir(join(src, 'build', 'version'), { recursive: true });
    await writeFile(join(src, 'build', 'version', 'version.txt'), FERRETDB_VERSION);

    const tmpBin = `${bin}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
    await sh('go', ['build', '-o', tmpBin, './cmd/ferretdb'], { cwd: src, env });
    if (!(await isRightVersion(tmpBin))) throw new Error(`built ${tmpBin} does not report ${FERRETDB_VERSION}`);
    await rename(tmpBin, bin);
    log(`built in ${Math.round((Date.now() - started) / 1000)}s`);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** A port on 127.0.0.1 free at the time of asking (tests and benches start servers on it). */
export async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', rej);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => res(port));
    });
  });
}

export interface FerretdbInstance {
  /** `mongodb://127.0.0.1:<port>/<database>` */
  url: string;
  port: number;
  stop(): Promise<void>;
}

/**
 * Starts FerretDB with the SQLite handler in a fresh temporary directory on a free loopback
 * port and resolves once it answers `ping`. `stop()` kills it and removes the directory.
 */
export async function startFerretdb(opts: { bin?: string; database?: string } = {}): Promise<FerretdbInstance> {
  const bin = opts.bin ?? (await ensureFerretdb());
  const dir = await mkdtemp(join(tmpdir(), 'svc-ferretdb-'));
  const logFile = join(dir, 'ferretdb.log');
  // The port is free when probed; another process could take it before FerretDB binds, so retry.
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const out = createWriteStream(logFile, { flags: 'a' });
    await new Promise((r) => out.once('open', r));
    const child = spawn(
      bin,
      [
        '--handler=sqlite',
        `--sqlite-url=file:${dir}/`,
        `--listen-addr=127.0.0.1:${port}`,
        `--state-dir=${dir}`,
        '--debug-addr=-',
        '--telemetry=disable',
        '--log-level=warn',
      ],
      { stdio: ['ignore', out, out] },
    );
    const exited = new Promise<string>((res) => {
      child.once('exit', (code, signal) => res(`exited with ${signal ?? code}`));
      child.once('error', (e) => res(`failed to start: ${e.message}`));
    });
    const url = `mongodb://127.0.0.1:${port}/${opts.database ?? 'svc_test'}`;
    const stop = async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(timer);
      }
      out.close();
      await rm(dir, { recursive: true, force: true });
    };
    try {
      await waitForPing(url, exited);
      return { url, port, stop };
    } catch (e) {
      const tail = (await readFile(logFile, 'utf8').catch(() => '')).slice(-4000);
      lastError = new Error(`FerretDB (${bin}) did not start on port ${port}: ${(e as Error).message}\n${tail}`);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
      out.close();
    }
  }
  await rm(dir, { recursive: true, force: true });
  throw lastError;
}

async function waitForPing(url: string, exited: Promise<string>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let gone: string | undefined;
  void exited.then((why) => (gone = why));
  let last: unknown;
  while (Date.now() < deadline) {
    if (gone) throw new Error(`process ${gone}`);
    const client = new MongoClient(url, { serverSelectionTimeoutMS: 500, connectTimeoutMS: 500 });
    try {
      await client.db().command({ ping: 1 });
      return;
    } catch (e) {
      last = e;
    } finally {
      await client.close().catch(() => {});
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no ping answer within ${timeoutMs} ms: ${(last as Error)?.message}`);
}

// `tsx scripts/ferretdb.ts` builds (if needed) and prints the binary path;
// `tsx scripts/ferretdb.ts start` also starts an instance and prints its URL until Ctrl-C.
if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const bin = await ensureFerretdb();
  console.log(bin);
  if (process.argv[2] === 'start') {
    const db = await startFerretdb({ bin });
    console.log(db.url);
    const stop = () => void db.stop().then(() => process.exit(0));
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  }
}
