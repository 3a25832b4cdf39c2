/**
 * One gateway of bench/cpu-pair.ts, in its own process: `startGateway` of the checkout named by
 * SVC_CPU_CHILD_REPO (embedded store in a fresh directory, that checkout's plugins, silent), then
 * on the parent's word it measures its own CPU (user + system) between `start` and `stop`.
 *
 * Protocol (child → parent): {url} once ready; {cpuMicros} after each `stop`.
 *           (parent → child): {cmd: 'start'} | {cmd: 'stop'} | {cmd: 'exit'}
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const repo = process.env.SVC_CPU_CHILD_REPO;
if (!repo || !process.send) throw new Error('started by bench/cpu-pair.ts only');
const send = process.send.bind(process);

const dataDir = mkdtempSync(join(tmpdir(), 'svc-cpu-pair-'));
const { startGateway } = (await import(pathToFileURL(join(repo, 'src/server.ts')).href)) as typeof import('../../src/server.js');
const gw = await startGateway({
  port: 0,
  host: '127.0.0.1',
  dataDir,
  pluginsDir: join(repo, 'plugins'),
  adminUsername: 'admin',
  adminPassword: process.env.SVC_CPU_CHILD_PASSWORD ?? 'pw-bench-123456',
  logLevel: 'silent',
});

let since = process.cpuUsage();
process.on('message', (m: { cmd: string }) => {
  if (m.cmd === 'start') {
    since = process.cpuUsage();
    send({ started: true });
  } else if (m.cmd === 'stop') {
    const used = process.cpuUsage(since);
    send({ cpuMicros: used.user + used.system });
  } else if (m.cmd === 'exit') {
    void gw.close().finally(() => {
      rmSync(dataDir, { recursive: true, force: true });
      process.exit(0);
    });
  }
});
send({ url: gw.url });
