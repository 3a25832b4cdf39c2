/** Reads the Prometheus text exposition of /metrics for the ops tests. */
import { call, type TestGateway } from '../helpers/gateway.js';

export interface PromSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export function parseProm(text: string): PromSample[] {
  const out: PromSample[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)/.exec(line);
    if (!m) throw new Error(`not a Prometheus sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

/** The value of the sample `name` whose labels include `labels` (summed over the others), or undefined. */
export function value(samples: PromSample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const hits = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return hits.length ? hits.reduce((a, s) => a + s.value, 0) : undefined;
}

export async function scrape(gw: TestGateway): Promise<{ text: string; samples: PromSample[] }> {
  const r = await call(gw, 'GET', '/metrics');
  if (r.status !== 200) throw new Error(`/metrics answered ${r.status}`);
  return { text: r.body as string, samples: parseProm(r.body as string) };
}
