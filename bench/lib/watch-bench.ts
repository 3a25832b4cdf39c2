/**
 * The watch benchmark (issue 10), one store per call: 1,000 REST WebSocket watchers on one
 * gateway; writes on a second gateway sharing the database (MongoDB) or on the same gateway
 * (embedded). Processes: watched gateway, writing gateway (MongoDB only), the watchers
 * (watch-clients-child.ts), and this process as the writer (creates over HTTP).
 *
 * Phases, on one fresh database, in `cycles` rounds (default 3) and a last no-watcher run:
 *   1. write throughput with no watcher: closed loop, `concurrency` creates in flight, `seconds`;
 *   2. (first round) the gateway's RSS (after a full GC) before and after opening the watchers,
 *      idle → per watcher;
 *   3. the same closed loop with the watchers open, once with writes none of them selects
 *      (the feed's own cost: polling, fan-out, selector checks) and once with writes every
 *      watcher receives (delivery included); then the watchers close;
 *   4. (first round) delay from a write's acknowledgement to its arrival at every watcher,
 *      writes spaced out;
 *   5. (first round) `rate` writes per second offered (open loop) for `seconds`: events
 *      delivered per second (over all watchers) until the last arrives or `drainSeconds` pass.
 * A round's ratios divide its phase 3 by the mean of the no-watcher runs before and after it,
 * and the table shows the median round: this machine's speed drifts by tens of percent within
 * a minute (neighbours on the host), and a single baseline made one ratio swing from 0.65 to
 * 1.06 between runs of the same code.
 * Watchers select `people.example.com/bench=watch` and start at the position after phase 1
 * (no initial list). The clients count events per socket (completion = every socket has as many
 * as there were acknowledged writes); in phase 4 they also record when each socket got its k-th
 * change (= the k-th timed write). Only a few verifying sockets decode events (and check them
 * against the writes); the watchers offer permessage-deflate unless `deflate` is false.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { BenchChild } from './children.js';
import { COLLECTION_PATH, GROUP } from './dataset.js';
import type { GatewayChildConfig } from './gateway-child.js';
import { HttpClient, percentile } from './load.js';
import { measureFloor } from './watch-floor.js';
import { deliveryWindowMs } from '../../src/store/feed/index.js';

export interface WatchBenchOptions {
  kind: 'embedded' | 'mongodb';
  dataDir: string;
  mongodbUrl?: string;
  pluginsDir: string;
  adminPassword: string;
  watchers: number;
  /** Offered writes per second in phase 5. */
  rate: number;
  /** Length of each throughput phase. */
  seconds: number;
  concurrency: number;
  drainSeconds?: number;
  /** When set, the watched gateway runs with --cpu-prof writing into this directory. */
  cpuProfDir?: string;
  /** When set, the watch clients' processes run with --cpu-prof writing into this directory. */
  clientsProfDir?: string;
  /** Pin the watched gateway to CPU 0, the watch clients and the writing gateway to CPU 1. */
  pin?: boolean;
  /** The watchers offer permessage-deflate (default true, as browsers do). */
  deflate?: boolean;
  /**
   * Rounds of (no watcher; watchers open: selecting none, receiving every write; watchers
   * closed), followed by a last no-watcher run. Each round's ratios use the no-watcher runs
   * on both sides of it; the table shows the median round. Default 3.
   */
  cycles?: number;
}

export interface WatchRow {
  what: string;
  value: number;
  unit: string;
  target: string;
  pass?: boolean;
}

export interface WatchBenchResult {
  store: string;
  rows: WatchRow[];
  notes: string[];
}

const LABEL = `${GROUP}/bench`;
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Reply = { type: string; [k: string]: unknown };
/** The clients' per-socket counters since their last reset (watch-clients-child.ts, 'report'). */
type Sockets = { n: number; open: number; min: number; minOpen: number; sum: number; last: number; bytes: number };
/** Every socket still open has received `n` events since the reset (a closed one gets no more). */
const allHave = (r: Reply, n: number) => {
  const s = r.sockets as Sockets;
  return s.minOpen === -1 || s.minOpen >= n;
};
function ask(child: BenchChild, msg: Record<string, unknown>, timeoutMs = 120_000): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${child.name}: no answer to ${String(msg.type)}`)), timeoutMs);
    const on = (m: Reply) => {
      if (m.type !== msg.type && !(msg.type === 'open' && m.type === 'opened')) return;
      clearTimeout(timer);
      child.proc.off('message', on);
      resolve(m);
    };
    child.proc.on('message', on);
    child.proc.send(msg);
  });
}

/** User + system CPU time of a process so far, µs (/proc/<pid>/stat, clock ticks of 10 ms). */
function cpuMicros(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) * 10_000;
  } catch {
    return 0;
  }
}

/**
 * Restricts every thread of a running child to one CPU. After the start, because fork() cannot
 * put `taskset` in front of node; threads started later inherit the mask.
 */
function pinTo(child: BenchChild, cpu: number): void {
  execFileSync('/usr/bin/taskset', ['-a', '-p', '-c', String(cpu), String(child.pid)], { stdio: 'ignore' });
}

/** RSS after a full GC in the gateway (the second reading follows the GC the first asked for). */
async function settledRss(gw: BenchChild): Promise<number> {
  await gw.memory();
  await sleep(200);
  await gw.memory();
  return (await gw.memory()).rss;
}

export async function benchWatch(o: WatchBenchOptions, log: (line: string) => void = console.log): Promise<WatchBenchResult> {
  const auth = { authorization: `Basic ${Buffer.from(`admin:${o.adminPassword}`).toString('base64')}` };
  const cfg: GatewayChildConfig = { dataDir: o.dataDir, mongodbUrl: o.mongodbUrl, pluginsDir: o.pluginsDir, adminPassword: o.adminPassword };
  const rows: WatchRow[] = [];
  const notes: string[] = [];
  // 1,000 watches of one user from one address: above the default per-user and per-address caps.
  process.env.SVC_MAX_WATCHES_PER_USER ??= String(o.watchers + 100);
  process.env.SVC_MAX_CONNECTIONS_PER_ADDRESS ??= String(o.watchers + 1000);
  const profArgs = o.cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${o.cpuProfDir}`] : [];
  const watched = await BenchChild.start('watched gateway', 'gateway-child.ts', cfg, ['--expose-gc', ...profArgs]);
  let writing: BenchChild | undefined;
  let clients: BenchChild | undefined;
  try {
    writing = o.kind === 'mongodb' ? await BenchChild.start('writing gateway', 'gateway-child.ts', cfg, ['--expose-gc']) : watched;
    log(`  watched gateway pid ${watched.pid}${writing !== watched ? `, writing gateway pid ${writing.pid} (same database)` : ' (also takes the writes)'}`);
    if (o.pin) {
      pinTo(watched, 0);
      if (writing !== watched) pinTo(writing, 1);
      log(`  pinned: watched gateway to CPU 0${writing !== watched ? ', writing gateway' : ''}, watch clients to CPU 1 (load generator not pinned)`);
    }
    const writer = new HttpClient(writing.url, Math.max(64, o.concurrency));
    const tag = randomBytes(3).toString('hex');
    let seq = 0;
    /** One create; resolves to its key and acknowledgement time, or undefined when it failed. */
    const create = async (label: string): Promise<{ key: string; ack: number } | undefined> => {
      const name = `wb-${tag}-${seq++}`;
      const body = JSON.stringify({ metadata: { name, labels: { [LABEL]: label } }, spec: { name, age: seq % 100 } });
      try {
        const r = await writer.request({ method: 'POST', path: COLLECTION_PATH, body }, auth);
        if (r.status !== 201) return undefined;
      } catch {
        return undefined;
      }
      return { key: `${name}@1`, ack: now() };
    };
    /**
     * CPU time per acknowledged write of each process in a phase, µs: where the time goes (the
     * watch clients run on the same 2 cores as the gateway they measure).
     */
    type Cpu = { watched: number; writing: number; clients: number; bench: number };
    const cpuNow = (): Cpu => ({
      watched: cpuMicros(watched.pid),
      writing: writing !== watched ? cpuMicros(writing!.pid) : 0,
      clients: cpuMicros(clients?.pid),
      bench: process.cpuUsage().user + process.cpuUsage().system,
    });
    const closedLoop = async (label: string): Promise<{ rps: number; done: number; errors: number; cpu: Cpu }> => {
      const end = performance.now() + o.seconds * 1000;
      let done = 0;
      let errors = 0;
      const c0 = cpuNow();
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: o.concurrency }, async () => {
          while (performance.now() < end) {
            if (await create(label)) done++;
            else errors++;
          }
        }),
      );
      const c1 = cpuNow();
      const per = (k: keyof Cpu) => (c1[k] - c0[k]) / Math.max(1, done);
      return { rps: (done / (performance.now() - t0)) * 1000, done, errors, cpu: { watched: per('watched'), writing: per('writing'), clients: per('clients'), bench: per('bench') } };
    };
    const cpuLine = (c: Cpu) =>
      `CPU per write: watched gateway ${c.watched.toFixed(0)} µs${writing !== watched ? `, writing gateway ${c.writing.toFixed(0)} µs` : ''}, ` +
      `watch clients ${c.clients.toFixed(0)} µs, load generator ${c.bench.toFixed(0)} µs`;

    // Warm-up (JIT, connections, the collections of the feed).
    const warm = o.seconds;
    o = { ...o, seconds: Math.min(2, o.seconds) };
    await closedLoop('quiet');
    o = { ...o, seconds: warm };

    /** Phases 4 and 5, with the watchers of the first cycle. */
    const latencyAndRate = async (clients: BenchChild): Promise<void> => {
      // 4. Delay from acknowledgement to delivery at every watcher.
      const samples = 100;
      const acks: { key: string; ack: number }[] = [];
      for (let i = 0; i < samples; i++) {
        const a = await create('watch');
        if (a) acks.push(a);
        await sleep(50);
      }
      const waitAll = async (keys: string[], ms: number) => {
        const end = Date.now() + ms;
        for (;;) {
          const r = await ask(clients, { type: 'report', keys });
          const seen = r.seen as [number, number, number][];
          if (seen.every((s) => s[0] >= o.watchers) || Date.now() > end) return r;
          await sleep(200);
        }
      };
      const lat = await waitAll(acks.map((a) => a.key), 30_000);
      if (lat.bad) notes.push(`latency phase: ${String(lat.bad)} frames or events the verifying watchers did not read as the timed writes, in order.`);
      const seen = lat.seen as [number, number, number][];
      const complete = seen.filter((s) => s[0] >= o.watchers).length;
      const toAll = seen.map((s, i) => (s[0] >= o.watchers ? Math.max(0, s[2] - acks[i]!.ack) : Infinity));
      const toFirst = seen.map((s, i) => (s[0] ? Math.max(0, s[1] - acks[i]!.ack) : Infinity));
      const p = (xs: number[], q: number) => percentile(xs, q);
      log(`  delay ack → all ${o.watchers} watchers over ${acks.length} writes: p50 ${p(toAll, 50).toFixed(1)} ms, p99 ${p(toAll, 99).toFixed(1)} ms (first watcher p50 ${p(toFirst, 50).toFixed(1)} ms)`);
      if (complete < acks.length) notes.push(`${acks.length - complete} of ${acks.length} timed writes did not reach every watcher within 30 s (counted as infinite delay).`);
      rows.push({ what: `delay acknowledged write → delivered to all ${o.watchers} watchers, p50`, value: p(toAll, 50), unit: 'ms', target: '—' });
      rows.push({ what: `delay acknowledged write → delivered to all ${o.watchers} watchers, p99`, value: p(toAll, 99), unit: 'ms', target: '≤ 1000 ms', pass: p(toAll, 99) <= 1000 });
      rows.push({ what: 'delay acknowledged write → first watcher, p50 (info)', value: p(toFirst, 50), unit: 'ms', target: '—' });
      await ask(clients, { type: 'mode', keys: false });
      await ask(clients, { type: 'reset' });

      // 5. Offered rate, open loop.
      const total = Math.round(o.rate * o.seconds);
      const tickMs = 10;
      const perTick = (o.rate * tickMs) / 1000;
      let acked = 0;
      const inflight: Promise<void>[] = [];
      let failed = 0;
      let skipped = 0;
      let open = 0;
      const t0 = now();
      for (let sent = 0, tick = 0; sent < total; tick++) {
        const due = Math.min(total, Math.round((tick + 1) * perTick));
        for (; sent < due; sent++) {
          // Open loop, but never more than 256 writes in flight: beyond that a write is not sent.
          if (open >= 256) {
            skipped++;
            continue;
          }
          open++;
          inflight.push(
            create('watch').then((a) => {
              open--;
              if (a) acked++;
              else failed++;
            }),
          );
        }
        const wait = t0 + (tick + 1) * tickMs - now();
        if (wait > 0) await sleep(wait);
      }
      await Promise.all(inflight);
      const writesDone = now();
      const achieved = (acked / (writesDone - t0)) * 1000;
      const drainEnd = Date.now() + (o.drainSeconds ?? 30) * 1000;
      let drained = await ask(clients, { type: 'report' });
      while (!allHave(drained, acked) && Date.now() < drainEnd) {
        await sleep(200);
        drained = await ask(clients, { type: 'report' });
      }
      const got = drained.sockets as Sockets;
      const delivered = got.sum;
      const lastArrival = Math.max(got.last, t0);
      const eps = (delivered / (lastArrival - t0)) * 1000;
      log(
        `  ${o.rate} writes/s offered for ${o.seconds} s: ${achieved.toFixed(0)} writes/s acknowledged${failed ? ` (${failed} failed)` : ''}${skipped ? ` (${skipped} not sent: 256 in flight)` : ''}; ` +
          `${delivered} of ${acked * o.watchers} events delivered, ${eps.toFixed(0)} events/s, last ${((lastArrival - writesDone) / 1000).toFixed(1)} s after the last write` +
          `; watchers closed ${String(drained.closed)}, ERROR events ${String(drained.errors)}` +
          `${drained.bad ? `, ${String(drained.bad)} frames not read as events (fragmented, masked or not {"type":"…)` : ''}`,
      );
      rows.push({ what: `writes/s acknowledged with ${o.rate}/s offered (${o.watchers} watchers)`, value: achieved, unit: '/s', target: '—' });
      rows.push({ what: `events/s delivered (all watchers) under ${o.rate} writes/s offered`, value: eps, unit: '/s', target: '—' });
      rows.push({ what: `share of those events delivered (of writes × watchers)`, value: delivered / Math.max(1, acked * o.watchers), unit: '', target: '—' });
      if (drained.bad) notes.push(`${String(drained.bad)} WebSocket frames were not read as events (see the offered-rate line).`);
      if ((drained.closed as number) > 0) notes.push(`${String(drained.closed)} watchers were disconnected (slow consumer, ERROR 503) during the offered-rate phase.`);
    };

    type Phase = Awaited<ReturnType<typeof closedLoop>>;
    const cycles = Math.max(1, o.cycles ?? 3);
    const bases: Phase[] = [];
    const quiets: Phase[] = [];
    const alls: Phase[] = [];
    let wireBytes = 0;
    let perWatcher = 0;
    /** Opens the watchers in a fresh clients process, at the feed's current position. */
    const openWatchers = async (): Promise<BenchChild> => {
      const c = await BenchChild.start('watch clients', 'watch-clients-child.ts', {}, o.clientsProfDir ? ['--cpu-prof', `--cpu-prof-dir=${o.clientsProfDir}`] : []);
      if (o.pin) pinTo(c, 1);
      const start = JSON.parse((await writer.request({ method: 'GET', path: `${COLLECTION_PATH}?size=1` }, auth)).body.toString()) as { resourceVersion: string };
      const url = `${watched.url.replace(/^http/, 'ws')}${COLLECTION_PATH}?labelSelector=${encodeURIComponent(`${LABEL}=watch`)}&resourceVersion=${start.resourceVersion}`;
      const opened = await ask(c, { type: 'open', n: o.watchers, url, auth: auth.authorization, deflate: o.deflate !== false });
      if (opened.failed) throw new Error(`${String(opened.failed)} of ${o.watchers} watchers failed to open`);
      if (bases.length === 1) log(`  watchers that agreed permessage-deflate: ${String(opened.deflated)} of ${o.watchers}${o.deflate === false ? ' (not offered)' : ''}`);
      await ask(c, { type: 'reset' });
      return c;
    };

    for (let cycle = 0; cycle < cycles; cycle++) {
      const tag = cycles > 1 ? `[cycle ${cycle + 1}/${cycles}] ` : '';
      // 1. No watcher.
      const w0 = await closedLoop('watch');
      bases.push(w0);
      log(`  ${tag}no watcher: ${w0.rps.toFixed(0)} writes/s (${o.concurrency} in flight, ${o.seconds} s${w0.errors ? `, ${w0.errors} failed` : ''}); ${cpuLine(w0.cpu)}`);

      // 2. Idle watchers: RSS (first cycle). They start at the current position (nothing to replay).
      const before = cycle === 0 ? await settledRss(watched) : 0;
      clients = await openWatchers();
      if (cycle === 0) {
        await sleep(2000);
        const after = await settledRss(watched);
        perWatcher = (after - before) / o.watchers;
        log(`  ${o.watchers} idle watchers: gateway RSS ${(before / 2 ** 20).toFixed(1)} → ${(after / 2 ** 20).toFixed(1)} MiB`);
      }

      // 3. Write throughput with the watchers open. The clients only count events per socket here
      // (no decoding): they share the cores with the gateway, so they must cost it little.
      await ask(clients, { type: 'mode', keys: false });
      const wq = await closedLoop('quiet');
      quiets.push(wq);
      log(`  ${tag}${o.watchers} watchers, writes none selects: ${wq.rps.toFixed(0)} writes/s; ${cpuLine(wq.cpu)}`);
      await ask(clients, { type: 'reset' });
      const bytesBefore = ((await ask(clients, { type: 'report' })).sockets as Sockets).bytes;
      const wa = await closedLoop('watch');
      alls.push(wa);
      const waEnd = now();
      log(`  ${tag}${o.watchers} watchers, writes every watcher receives: ${wa.rps.toFixed(0)} writes/s; ${cpuLine(wa.cpu)}`);
      // let the deliveries of that phase finish before going on: every open socket has every
      // acknowledged write, or nothing arrived for 500 ms
      let drain = await ask(clients, { type: 'report' });
      for (let last = -1, i = 0; i < 240 && !allHave(drain, wa.done) && drain.total !== last; i++) {
        last = drain.total as number;
        await sleep(500);
        drain = await ask(clients, { type: 'report' });
      }
      const ds = drain.sockets as Sockets;
      // Bytes each watcher read per event (frames, compressed or not; pings and BOOKMARKs too).
      const bytes = (ds.bytes - bytesBefore) / Math.max(1, ds.sum);
      if (cycle === 0) wireBytes = bytes;
      log(
        `  ${tag}deliveries of that phase: ${ds.sum} of ${wa.done * o.watchers} events (${wa.done} acknowledged writes × ${o.watchers}), ` +
          `last ${((Math.max(ds.last, waEnd) - waEnd) / 1000).toFixed(1)} s after the last write; watchers closed ${String(drain.closed)}; ` +
          `${bytes.toFixed(0)} bytes on the wire per event and watcher${drain.bad ? `; ${String(drain.bad)} frames not read as events` : ''}`,
      );
      if (ds.sum < wa.done * o.watchers) notes.push(`cycle ${cycle + 1}: ${wa.done * o.watchers - ds.sum} events of the "receiving every write" phase did not arrive.`);

      if (cycle === 0) {
        await ask(clients, { type: 'mode', keys: true });
        await ask(clients, { type: 'reset' });
        await latencyAndRate(clients);
      }
      await clients.stop(2000);
      clients = undefined;
      await sleep(1000);
    }
    // 1 again: no watcher, after the last cycle (each cycle's baseline is the mean of the runs
    // before and after it, so a machine that slows down or speeds up during the run moves both).
    const wEnd = await closedLoop('watch');
    bases.push(wEnd);
    log(`  no watcher again: ${wEnd.rps.toFixed(0)} writes/s; ${cpuLine(wEnd.cpu)}`);

    const median = (xs: number[]) => {
      const v = [...xs].sort((x, y) => x - y);
      return v.length % 2 ? v[(v.length - 1) / 2]! : (v[v.length / 2 - 1]! + v[v.length / 2]!) / 2;
    };
    const baseOf = (c: number) => (bases[c]!.rps + bases[c + 1]!.rps) / 2;
    const cpuBaseOf = (c: number) => (bases[c]!.cpu.watched + bases[c + 1]!.cpu.watched) / 2;
    const ratios = (phases: Phase[]) => phases.map((ph, c) => ph.rps / baseOf(c));
    const cpuRatios = (phases: Phase[]) => phases.map((ph, c) => cpuBaseOf(c) / ph.cpu.watched);
    const list = (xs: number[]) => xs.map((x) => x.toFixed(2)).join(', ');
    const rq = ratios(quiets);
    const ra = ratios(alls);
    const each = cycles > 1 ? (xs: number[]) => ` (median of ${cycles} cycles: ${list(xs)})` : () => '';
    rows.unshift(
      { what: `write throughput, ${o.watchers} watchers selecting none of the writes ÷ no watcher${each(rq)}`, value: median(rq), unit: '', target: '≥ 0.8', pass: median(rq) >= 0.8 },
      { what: `write throughput, ${o.watchers} watchers receiving every write ÷ no watcher${each(ra)}`, value: median(ra), unit: '', target: '≥ 0.8', pass: median(ra) >= 0.8 },
      { what: `bytes on the wire per event and watcher, receiving every write${o.deflate !== false ? ' (permessage-deflate offered)' : ''}`, value: wireBytes, unit: 'B', target: '—' },
    );
    rows.unshift({ what: `RSS per idle watcher (${o.watchers} watchers, after GC)`, value: perWatcher / 1024, unit: 'KiB', target: '≤ 50 KB', pass: perWatcher <= 50_000 });
    const base = median(bases.map((b) => b.rps));
    rows.push({ what: `write throughput with no watcher (median of ${bases.length} runs around the cycles)`, value: base, unit: '/s', target: '—' });
    // The same comparison by CPU instead of wall time: what the watchers cost the gateway that
    // serves them per write, whatever else (the clients, other processes) ran on the cores.
    const cpu0 = median(bases.map((b) => b.cpu.watched));
    const wa = alls[ra.indexOf(median(ra))] ?? alls[0]!;
    rows.push({ what: 'watched gateway CPU per write: no watcher (median of the runs)', value: cpu0, unit: 'µs', target: '—' });
    rows.push({ what: `watched gateway CPU per write: ${o.watchers} watchers selecting none (median)`, value: median(quiets.map((q) => q.cpu.watched)), unit: 'µs', target: '—' });
    rows.push({ what: `watched gateway CPU per write: ${o.watchers} watchers receiving every write (median)`, value: median(alls.map((q) => q.cpu.watched)), unit: 'µs', target: '—' });
    rows.push({ what: `watch clients process CPU per write (${o.watchers} receiving every write, median)`, value: median(alls.map((q) => q.cpu.clients)), unit: 'µs', target: '—' });
    if (writing === watched) {
      const cq = cpuRatios(quiets);
      const ca = cpuRatios(alls);
      rows.push({ what: `write throughput bound by the gateway's own CPU, selecting none (CPU per write: none ÷ with watchers)${each(cq)}`, value: median(cq), unit: '', target: '(≥ 0.8)' });
      rows.push({ what: `write throughput bound by the gateway's own CPU, receiving every write (CPU per write: none ÷ with watchers)${each(ca)}`, value: median(ca), unit: '', target: '(≥ 0.8)' });
    }
    // The transport floor: the same bytes (event size, rate, delivery window of that phase)
    // written by a bare process to as many loopback sockets, read by another (watch-floor.ts).
    const sampleName = (await create('quiet'))?.key.split('@')[0];
    const sample = sampleName ? await writer.request({ method: 'GET', path: `${COLLECTION_PATH}/${sampleName}` }, auth) : undefined;
    if (sample?.status === 200) {
      const payload = Buffer.byteLength(JSON.stringify({ type: 'ADDED', object: JSON.parse(sample.body.toString()), resourceVersion: '1000000' }));
      // The bytes as they left: the frames measured on the wire (smaller when compressed).
      const eventBytes = Math.min(payload + (payload > 125 ? 4 : 2), Math.round(wireBytes));
      const windowMs = deliveryWindowMs(o.watchers);
      const floor = await measureFloor({ sockets: o.watchers, eventBytes, eventsPerSecond: wa.rps, windowMs, seconds: o.seconds });
      const fanout = wa.cpu.watched - cpu0;
      log(`  transport floor: ${eventBytes}-byte events at ${wa.rps.toFixed(0)}/s to ${o.watchers} loopback sockets, one write per socket per ${windowMs} ms: ${floor.toFixed(0)} µs CPU per event (bare sender)`);
      rows.push({ what: `transport floor: a bare process writing the same bytes to ${o.watchers} loopback sockets, CPU per write (${eventBytes} B per event, ${windowMs} ms batches)`, value: floor, unit: 'µs', target: '—' });
      rows.push({ what: `watched gateway CPU per write for delivery (receiving every write − no watcher) ÷ transport floor`, value: fanout / floor, unit: '', target: '—' });
    }
    writer.close();
    return { store: o.kind, rows, notes };
  } finally {
    if (clients) await clients.stop(2000);
    if (writing && writing !== watched) await writing.stop();
    await watched.stop();
  }
}
