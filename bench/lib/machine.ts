/** What the numbers were measured on. */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import Database from 'better-sqlite3';

export interface MachineInfo {
  cpu: string;
  cores: number;
  ramGiB: number;
  node: string;
  os: string;
  loadavg: string;
  sqlite: string;
  /** Commit of the gateway under test, plus uncommitted changes to src/ and plugins/. */
  code: string;
}

function codeVersion(): string {
  const git = (...args: string[]) => execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  try {
    const head = git('log', '-1', '--format=%h %s');
    const dirty = git('status', '--porcelain', '--', 'src', 'plugins').split('\n').filter(Boolean);
    return `${head}${dirty.length ? ` + uncommitted changes in ${dirty.length} file(s) under src/ or plugins/` : ''}`;
  } catch {
    return 'unknown (no git)';
  }
}

export function machineInfo(): MachineInfo {
  let cpu = os.cpus()[0]?.model ?? 'unknown';
  try {
    cpu = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1]?.trim() ?? cpu;
  } catch {
    // not Linux
  }
  const db = new Database(':memory:');
  const sqlite = db.prepare('SELECT sqlite_version()').pluck().get() as string;
  db.close();
  return {
    cpu,
    cores: os.availableParallelism?.() ?? os.cpus().length,
    ramGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    loadavg: os.loadavg().map((l) => l.toFixed(2)).join(' '),
    sqlite,
    code: codeVersion(),
  };
}
