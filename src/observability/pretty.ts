/**
 * Readable log lines for a terminal (pino writes JSON lines; this destination reformats each):
 *   08:31:47.120 INFO  request  method=GET path=/apis/… status=200 duration=1.2 username=admin
 * Only used when stdout is a TTY; anything else gets pino's JSON unchanged.
 */
import type { Writable } from 'node:stream';

const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO ', 40: 'WARN ', 50: 'ERROR', 60: 'FATAL' };
const OMIT = new Set(['level', 'time', 'msg', 'pid', 'hostname']);

export function formatLine(json: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json.endsWith('\n') ? json : `${json}\n`;
  }
  const time = typeof entry.time === 'number' ? new Date(entry.time).toISOString().slice(11, 23) : '';
  const level = LEVELS[entry.level as number] ?? String(entry.level ?? '');
  const fields = Object.entries(entry)
    .filter(([k]) => !OMIT.has(k))
    .map(([k, v]) => `${k}=${typeof v === 'string' ? (/[\s"=]/.test(v) ? JSON.stringify(v) : v) : JSON.stringify(v)}`);
  return `${[time, level, entry.msg ?? '', ...fields].filter((p) => p !== '').join(' ')}\n`;
}

/** A pino destination that writes `formatLine` of every line to `out`. */
export function prettyDestination(out: Writable): { write(line: string): void } {
  return { write: (line: string) => void out.write(formatLine(line)) };
}
