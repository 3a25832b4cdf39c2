/**
 * Summarises a V8 .cpuprofile (node --cpu-prof): top frames by self time, and the project's
 * own frames (src/) by inclusive time. `tsx bench/lib/profile.ts <file.cpuprofile> [top]`.
 */
import { readFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

const repoRoot = resolve(fileURLToPath(new URL('../..', import.meta.url)));

function frameKey(f: CallFrame): string {
  let where = f.url;
  if (where.startsWith('file://')) where = relative(repoRoot, fileURLToPath(where));
  where = where.replace(/^node_modules\//, 'nm:');
  return `${f.functionName || '(anonymous)'} ${where ? `${where}:${f.lineNumber + 1}` : ''}`.trim();
}

/** Non-idle sampled microseconds of a profile. */
export function busyMicros(file: string): number {
  const p = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const idle = new Set(p.nodes.filter((n) => ['(idle)', '(program)'].includes(n.callFrame.functionName)).map((n) => n.id));
  let us = 0;
  for (let i = 0; i < p.samples.length; i++) if (!idle.has(p.samples[i]!)) us += p.timeDeltas[i] ?? 0;
  return us;
}

/**
 * `node --cpu-prof` writes one profile per thread; with `--import tsx` the module-loader worker
 * has its own. The main thread is the busiest one.
 */
export function busiestProfile(files: string[]): string | undefined {
  let best: string | undefined;
  let bestUs = -1;
  for (const f of files) {
    const us = busyMicros(f);
    if (us > bestUs) [best, bestUs] = [f, us];
  }
  return best;
}

export function summarize(file: string, top = 25): string {
  const p = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  for (let i = 0; i < p.samples.length; i++) {
    const id = p.samples[i]!;
    selfUs.set(id, (selfUs.get(id) ?? 0) + (p.timeDeltas[i] ?? 0));
  }
  const totalUs = [...selfUs.values()].reduce((a, b) => a + b, 0);
  const idle = p.nodes.filter((n) => ['(idle)', '(program)', '(garbage collector)'].includes(n.callFrame.functionName));

  const self = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const k = frameKey(byId.get(id)!.callFrame);
    self.set(k, (self.get(k) ?? 0) + us);
  }

  // Inclusive time per frame key, counting each key once per stack (recursion-safe).
  const inclusive = new Map<string, number>();
  const subtree = new Map<number, number>();
  const sub = (id: number): number => {
    const cached = subtree.get(id);
    if (cached !== undefined) return cached;
    const n = byId.get(id)!;
    const t = (selfUs.get(id) ?? 0) + (n.children ?? []).reduce((a, c) => a + sub(c), 0);
    subtree.set(id, t);
    return t;
  };
  const root = p.nodes[0]!;
  const walk = (id: number, onStack: Set<string>) => {
    const n = byId.get(id)!;
    const k = frameKey(n.callFrame);
    const fresh = !onStack.has(k);
    if (fresh) {
      inclusive.set(k, (inclusive.get(k) ?? 0) + sub(id));
      onStack.add(k);
    }
    for (const c of n.children ?? []) walk(c, onStack);
    if (fresh) onStack.delete(k);
  };
  walk(root.id, new Set());

  // Self time per package (node_modules/<pkg>), project dir, or node internals.
  const byPackage = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const f = byId.get(id)!.callFrame;
    let pkg: string;
    const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)\/(?!.*node_modules\/)/.exec(f.url);
    if (nm) pkg = nm[1]!;
    else if (f.url.startsWith('file://')) pkg = relative(repoRoot, fileURLToPath(f.url)).split('/')[0] ?? '?';
    else if (f.url.startsWith('node:')) pkg = 'node internals';
    else pkg = f.functionName.startsWith('(') ? f.functionName : 'native (syscalls, JSON, …)';
    byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + us);
  }

  const pct = (us: number) => `${((us / totalUs) * 100).toFixed(1).padStart(5)}%`;
  const lines: string[] = [];
  const idleUs = idle.reduce((a, n) => a + (selfUs.get(n.id) ?? 0), 0);
  lines.push(`profile ${file}: ${(totalUs / 1e6).toFixed(1)} s sampled, idle/program/gc ${pct(idleUs)}`);
  lines.push('self time by package:');
  for (const [k, us] of [...byPackage].sort((a, b) => b[1] - a[1]).slice(0, 14)) lines.push(`  ${pct(us)}  ${k}`);
  lines.push(`top ${top} by self time:`);
  for (const [k, us] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`  ${pct(us)}  ${k}`);
  lines.push(`top ${top} project frames (src/) by inclusive time:`);
  for (const [k, us] of [...inclusive]
    .filter(([k]) => / src\//.test(k))
    .sort((a, b) => b[1] - a[1])
    .slice(0, top))
    lines.push(`  ${pct(us)}  ${k}`);
  return lines.join('\n');
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [file, top] = process.argv.slice(2);
  if (!file) {
    console.error('usage: tsx bench/lib/profile.ts <file.cpuprofile> [top]');
    process.exit(2);
  }
  console.log(summarize(file, top ? Number(top) : 25));
}
