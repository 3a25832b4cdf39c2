/**
 * Operations cost (issue 22 target: ≥ 0.9×): REST get and create on the embedded store, one
 * gateway child with metrics, the request log at info (to a file) and the audit log (to a file)
 * on, one with all three off, each on its own data directory. Rounds alternate which gateway
 * goes first; each round's ratio is throughput on ÷ off of adjacent runs, the median is reported.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { BenchChild } from './children.js';
import type { GatewayChildConfig } from './gateway-child.js';
import { alternatingRounds, HttpClient, median, percentile, runLoad, type RequestSpec } from './load.js';

const PERSONS = '/apis/people.example.com/v1alpha1/persons';

export interface OpsBenchOptions {
  workDir: string;
  pluginsDir: string;
  adminPassword: string;
  requests: number;
  concurrency: number;
  rounds: number;
  warmup: number;
}

export interface OpsBenchRow {
  what: string;
  value: number;
  unit: string;
  target: string;
  pass?: boolean;
}

export interface OpsBenchResult {
  rows: OpsBenchRow[];
  notes: string[];
}

export async function benchOps(o: OpsBenchOptions): Promise<OpsBenchResult> {
  await mkdir(o.workDir, { recursive: true });
  const base = { pluginsDir: o.pluginsDir, adminPassword: o.adminPassword };
  const onCfg: GatewayChildConfig = {
    ...base,
    dataDir: join(o.workDir, 'on'),
    ops: { mode: 'on', auditLog: join(o.workDir, 'audit.log'), requestLog: join(o.workDir, 'request.log') },
  };
  const offCfg: GatewayChildConfig = { ...base, dataDir: join(o.workDir, 'off'), ops: { mode: 'off' } };
  const on = await BenchChild.start('gateway (operations on)', 'gateway-child.ts', onCfg);
  const off = await BenchChild.start('gateway (operations off)', 'gateway-child.ts', offCfg);
  const headers = { authorization: `Basic ${Buffer.from(`admin:${o.adminPassword}`).toString('base64')}` };
  const clients = { on: new HttpClient(on.url, o.concurrency), off: new HttpClient(off.url, o.concurrency) };
  try {
    for (const c of Object.values(clients)) {
      const r = await c.request({ method: 'POST', path: PERSONS, body: JSON.stringify({ metadata: { name: 'ops-bench' }, spec: { name: 'Ops' } }) }, headers);
      if (r.status !== 201) throw new Error(`seeding failed: ${r.status} ${r.body.toString('utf8').slice(0, 300)}`);
    }
    let serial = 0;
    const scenarios: Record<string, { make: (i: number) => RequestSpec; ok: number }> = {
      'REST get': { make: () => ({ method: 'GET', path: `${PERSONS}/ops-bench` }), ok: 200 },
      'REST create': {
        make: () => ({ method: 'POST', path: PERSONS, body: JSON.stringify({ metadata: { name: `ops-${serial++}` }, spec: { name: 'Ops' } }) }),
        ok: 201,
      },
    };
    const run = async (side: 'on' | 'off', make: (i: number) => RequestSpec, ok: number, requests: number) => {
      const r = await runLoad(clients[side], make, { requests, concurrency: o.concurrency, headers });
      // runLoad counts anything but 200 as an error: a create's 201 is the expected answer.
      if (r.errors && !(ok === 201 && r.errors === r.requests && r.firstError?.includes('→ 201:'))) {
        throw new Error(`${side}: ${r.errors} errors, first: ${r.firstError}`);
      }
      return r;
    };
    const rows: OpsBenchRow[] = [];
    for (const [name, s] of Object.entries(scenarios)) {
      await run('on', s.make, s.ok, o.warmup);
      await run('off', s.make, s.ok, o.warmup);
      const { runs, ratios } = await alternatingRounds(o.rounds, ['on', 'off'], (side) => run(side, s.make, s.ok, o.requests));
      const rps = { on: runs.on.map((r) => r.rps), off: runs.off.map((r) => r.rps) };
      const p99 = { on: runs.on.map((r) => percentile(r.latencies, 99)), off: runs.off.map((r) => percentile(r.latencies, 99)) };
      const ratio = median(ratios);
      rows.push({ what: `${name}: throughput on ÷ off`, value: ratio, unit: '', target: '≥ 0.9×', pass: ratio >= 0.9 });
      rows.push({ what: `${name}: req/s on / off`, value: median(rps.on), unit: `/ ${median(rps.off).toFixed(0)} req/s`, target: '', pass: undefined });
      rows.push({ what: `${name}: p99 on / off`, value: median(p99.on), unit: `/ ${median(p99.off).toFixed(2)} ms`, target: '', pass: undefined });
    }
    return { rows, notes: [] };
  } finally {
    clients.on.close();
    clients.off.close();
    await on.stop();
    await off.stop();
  }
}
