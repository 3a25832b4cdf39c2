/**
 * Child processes of the benchmark (the gateway under test and the raw-driver baseline):
 * started with `node --import tsx <file>` (so the pid is the server itself, not a tsx wrapper),
 * configured through one JSON environment variable, reporting readiness over IPC.
 *
 * Protocol (child → parent): {type:'ready', url} | {type:'error', message} | {type:'mem', mem}
 *           (parent → child): {type:'mem'} | {type:'stop'}
 */
import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const CHILD_CONFIG_ENV = 'SVC_BENCH_CHILD_CONFIG';
const libDir = dirname(fileURLToPath(import.meta.url));

export type ChildMessage =
  | { type: 'ready'; url: string; [extra: string]: unknown }
  | { type: 'error'; message: string }
  | { type: 'mem'; mem: NodeJS.MemoryUsage };

export interface Memory {
  /** VmRSS from /proc/<pid>/status, bytes. */
  rss: number;
  /** VmHWM (peak RSS) from /proc/<pid>/status, bytes. */
  hwm: number;
  /** process.memoryUsage() reported by the child over IPC, after a full GC when it has --expose-gc. */
  self?: NodeJS.MemoryUsage;
}

/** Live children, so a crash or Ctrl-C of the parent can kill them. */
const live = new Set<ChildProcess>();

export function killAllChildren(): void {
  for (const c of live) {
    if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  }
  live.clear();
}

export class BenchChild {
  private constructor(
    readonly name: string,
    readonly proc: ChildProcess,
    readonly url: string,
    /** The child's `ready` message (a child may add fields to it). */
    readonly ready: Record<string, unknown> = {},
  ) {}

  /**
   * Forks `bench/lib/<file>` with `config` and waits for its `ready` message.
   * `execArgv` adds node flags (e.g. `--cpu-prof`).
   */
  static async start(name: string, file: string, config: unknown, execArgv: string[] = [], timeoutMs = 300_000): Promise<BenchChild> {
    const proc = fork(join(libDir, file), [], {
      execArgv: ['--import', 'tsx', ...execArgv],
      // NODE_ENV=production as `npm start` (src/cli.ts) sets it: graphql-js skips its dev-only checks.
      env: { ...process.env, NODE_ENV: process.env.NODE_ENV ?? 'production', [CHILD_CONFIG_ENV]: JSON.stringify(config) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    live.add(proc);
    proc.once('exit', () => live.delete(proc));
    try {
      const ready = await new Promise<Extract<ChildMessage, { type: 'ready' }>>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`${name} did not start within ${timeoutMs} ms`)), timeoutMs);
        proc.on('message', (m: ChildMessage) => {
          if (m.type === 'ready') {
            clearTimeout(timer);
            resolve(m);
          } else if (m.type === 'error') {
            clearTimeout(timer);
            reject(new Error(`${name} failed to start: ${m.message}`));
          }
        });
        proc.once('exit', (code, signal) => {
          clearTimeout(timer);
          reject(new Error(`${name} exited with ${signal ?? code} before it was ready`));
        });
      });
      return new BenchChild(name, proc, ready.url, ready);
    } catch (e) {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
      throw e;
    }
  }

  get pid(): number {
    return this.proc.pid!;
  }

  /** RSS from /proc (as the load left it) first, then the child's process.memoryUsage() (after GC). */
  async memory(): Promise<Memory> {
    const status = readFileSync(`/proc/${this.pid}/status`, 'utf8');
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
    const self = await new Promise<NodeJS.MemoryUsage | undefined>((resolve) => {
      const timer = setTimeout(() => resolve(undefined), 2000);
      const onMessage = (m: ChildMessage) => {
        if (m.type !== 'mem') return;
        clearTimeout(timer);
        this.proc.off('message', onMessage);
        resolve(m.mem);
      };
      this.proc.on('message', onMessage);
      this.proc.send({ type: 'mem' });
    });
    return { rss: kb('VmRSS'), hwm: kb('VmHWM'), self };
  }

  /** Asks the child to close and exit (so `--cpu-prof` can write its profile); kills it after `graceMs`. */
  async stop(graceMs = 10_000): Promise<void> {
    const { proc } = this;
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    try {
      proc.send({ type: 'stop' });
    } catch {
      proc.kill('SIGTERM');
    }
    const timer = setTimeout(() => proc.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  }
}

/** Child side: the config passed by the parent. */
export function childConfig<T>(): T {
  const text = process.env[CHILD_CONFIG_ENV];
  if (!text) throw new Error(`${CHILD_CONFIG_ENV} is not set (this file is started by bench/run.ts)`);
  return JSON.parse(text) as T;
}

/** Child side: answers `mem`, runs `close` then exits on `stop` or when the parent goes away. */
export function serveChildProtocol(url: string, close: () => Promise<void>): void {
  let closing = false;
  const shutdown = () => {
    if (closing) return;
    closing = true;
    const hard = setTimeout(() => process.exit(1), 8000);
    hard.unref();
    close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('message', (m: { type?: string }) => {
    if (m?.type === 'mem') {
      // With --expose-gc: a full collection first, so heapUsed is what is really retained.
      (globalThis as { gc?: () => void }).gc?.();
      process.send?.({ type: 'mem', mem: process.memoryUsage() } satisfies ChildMessage);
    }
    else if (m?.type === 'stop') shutdown();
  });
  process.on('disconnect', shutdown);
  process.on('SIGTERM', shutdown);
  process.send?.({ type: 'ready', url } satisfies ChildMessage);
}

export function reportStartError(e: unknown): void {
  const message = e instanceof Error ? (e.stack ?? e.message) : String(e);
  if (process.send) process.send({ type: 'error', message } satisfies ChildMessage, () => process.exit(1));
  else {
    console.error(message);
    process.exit(1);
  }
}
