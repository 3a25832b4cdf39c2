/**
 * `npx tsx bench/lib/tracing-bench.ts` (issue 22 item 6 target): REST get throughput with
 * tracing on (OTLP/HTTP http/protobuf to a local receiver in this process) ÷ off, two gateway
 * children on one embedded database, in interleaved rounds; the median of the per-round ratios
 * is reported (target ≥ 0.8). BENCH_TRACE_ROUNDS, BENCH_TRACE_REQUESTS, BENCH_TRACE_CONCURRENCY
 * override the defaults (7, 3000, 16).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BenchChild, killAllChildren } from './children.js';
import type { GatewayChildConfig } from './gateway-child.js';
import { HttpClient, median, runLoad } from './load.js';

const ROUNDS = Number(process.env.BENCH_TRACE_ROUNDS ?? 7);
const REQUESTS = Number(process.env.BENCH_TRACE_REQUESTS ?? 3000);
const CONCURRENCY = Number(process.env.BENCH_TRACE_CONCURRENCY ?? 16);
const PASSWORD = 'bench-admin-password';
const AUTH = { authorization: `Basic ${Buffer.from(`admin:${PASSWORD}`).toString('base64')}` };
const PATH = '/apis/people.example.com/v1alpha1/persons/traced';

let received = 0;
const collector = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    received++;
    res.writeHead(200, { 'content-type': 'application/x-protobuf' });
    res.end();
  });
});
await new Promise<void>((r) => collector.listen(0, '127.0.0.1', () => r()));
const endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;

const dataDir = await mkdtemp(join(tmpdir(), 'svc-trace-bench-'));
const config: GatewayChildConfig = { dataDir, pluginsDir: join(import.meta.dirname, '../../plugins'), adminPassword: PASSWORD };
try {
  delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
  const off = await BenchChild.start('tracing-off', 'gateway-child.ts', config);
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = endpoint;
  const on = await BenchChild.start('tracing-on', 'gateway-child.ts', config);
  delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
  const clients = { off: new HttpClient(off.url, CONCURRENCY), on: new HttpClient(on.url, CONCURRENCY) };
  const created = await clients.off.request(
    { method: 'POST', path: '/apis/people.example.com/v1alpha1/persons', body: JSON.stringify({ metadata: { name: 'traced' }, spec: { name: 'T' } }) },
    { ...AUTH, 'content-type': 'application/json' },
  );
  if (created.status !== 201) throw new Error(`seed: ${created.status} ${created.body}`);
  const spec = () => ({ method: 'GET' as const, path: PATH });
  for (const c of Object.values(clients)) await runLoad(c, spec, { requests: 2000, concurrency: CONCURRENCY, headers: AUTH, deadlineMs: 5000 });
  const ratios: number[] = [];
  const rps = { off: [] as number[], on: [] as number[] };
  for (let r = 0; r < ROUNDS; r++) {
    // alternate which goes first, so drift favours neither
    const order = r % 2 ? (['on', 'off'] as const) : (['off', 'on'] as const);
    const got: Record<string, number> = {};
    for (const k of order) {
      const res = await runLoad(clients[k], spec, { requests: REQUESTS, concurrency: CONCURRENCY, headers: AUTH });
      if (res.errors) throw new Error(`${k}: ${res.errors} errors (${res.firstError})`);
      got[k] = res.rps;
      rps[k].push(res.rps);
    }
    ratios.push(got.on! / got.off!);
  }
  await on.stop();
  await off.stop();
  console.log(
    JSON.stringify({
      scenario: 'REST get, embedded',
      rounds: ROUNDS,
      requests: REQUESTS,
      concurrency: CONCURRENCY,
      rpsOff: Math.round(median(rps.off)),
      rpsOn: Math.round(median(rps.on)),
      ratioOnOff: Number(median(ratios).toFixed(3)),
      exportPosts: received,
    }),
  );
} finally {
  killAllChildren();
  collector.close();
  await rm(dataDir, { recursive: true, force: true });
}
