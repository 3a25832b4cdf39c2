/**
 * The transport floor of watch fan-out (issue 10 benchmark): what it costs a bare Node process,
 * doing nothing else, to write given bytes to N loopback TCP sockets in batches, read by N
 * sockets of a second process. The watch benchmark runs it with the event size, write rate and
 * batch interval of its "receiving every write" phase, so the gateway's fan-out cost can be
 * compared with the cost of the bytes themselves on the same machine in the same run.
 *
 * `measureFloor(o)` forks this file twice (sender, which forks the reader) and returns the
 * sender's CPU time (user + system) per "write", i.e. per event delivered to all N sockets.
 */
import { fork } from 'node:child_process';
import { createServer, connect, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';

export interface FloorOptions {
  sockets: number;
  /** Bytes per event on the wire (a WebSocket frame). */
  eventBytes: number;
  eventsPerSecond: number;
  /** One write per socket per window, carrying the window's events. */
  windowMs: number;
  seconds: number;
}

const self = fileURLToPath(import.meta.url);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** CPU µs of the sender per event delivered to all sockets. */
export function measureFloor(o: FloorOptions): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = fork(self, ['sender', JSON.stringify(o)], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    child.once('message', (m: { perEvent?: number; error?: string }) => {
      child.kill();
      if (m.error !== undefined) reject(new Error(m.error));
      else resolve(m.perEvent!);
    });
    child.once('exit', (code) => reject(new Error(`floor sender exited with ${String(code)}`)));
  });
}

async function sender(o: FloorOptions): Promise<void> {
  const socks: Socket[] = [];
  const server = createServer((s) => socks.push(s));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  const reader = fork(self, ['reader', String(o.sockets), String(port)], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  while (socks.length < o.sockets) await sleep(20);
  await sleep(200);
  const perBatch = Math.max(1, Math.round((o.eventsPerSecond * o.windowMs) / 1000));
  const bytes = Buffer.alloc(perBatch * o.eventBytes, 'x');
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  let batches = 0;
  while (performance.now() - t0 < o.seconds * 1000) {
    const at = t0 + batches * o.windowMs;
    for (const s of socks) s.write(bytes);
    batches++;
    await sleep(Math.max(0, at + o.windowMs - performance.now()));
  }
  const c = process.cpuUsage(c0);
  reader.kill();
  process.send!({ perEvent: (c.user + c.system) / (batches * perBatch) });
}

function reader(n: number, port: number): void {
  for (let i = 0; i < n; i++) connect(port, '127.0.0.1').on('data', () => undefined);
}

if (process.argv[2] === 'sender') {
  sender(JSON.parse(process.argv[3]!) as FloorOptions).catch((e: unknown) => process.send!({ error: String(e) }));
} else if (process.argv[2] === 'reader') {
  reader(Number(process.argv[3]), Number(process.argv[4]));
}
