/**
 * MongoDB write throughput and commands per write (issue 20): an in-process gateway on
 * `MONGODB_URL` (a fresh database), 8 clients creating Persons for `SECONDS`, then merge-patching
 * them for `SECONDS`; every driver command is counted (GatewayOptions.onMongoCommand).
 *
 *   MONGODB_URL=mongodb://127.0.0.1:27017 npx tsx bench/write-commands.ts
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { startGateway } from '../src/server.js';

const CLIENTS = 8;
const SECONDS = Number(process.env.SECONDS ?? 10);
const PERSONS = '/apis/people.example.com/v1alpha1/persons';

async function main(): Promise<void> {
  const base = new URL(process.env.MONGODB_URL ?? 'mongodb://127.0.0.1:27017');
  base.pathname = `/bench_w_${randomBytes(4).toString('hex')}`;
  let commands = 0;
  const gw = await startGateway(
    {
      port: 0,
      host: '127.0.0.1',
      dataDir: await mkdtemp(join(tmpdir(), 'svc-bw-')),
      mongodbUrl: base.toString(),
      pluginsDir: join(import.meta.dirname, '../plugins'),
      adminUsername: 'admin',
      adminPassword: 'bench-admin-password',
      logLevel: 'silent',
    },
    { onMongoCommand: () => void commands++ },
  );
  const auth = `Basic ${Buffer.from('admin:bench-admin-password').toString('base64')}`;
  const names: string[] = [];
  const phase = async (what: string, one: (c: number, i: number) => Promise<number>) => {
    await new Promise((r) => setTimeout(r, 1500));
    const idleFrom = commands;
    await new Promise((r) => setTimeout(r, 2000));
    const idle = (commands - idleFrom) / 2;
    const from = commands;
    const end = Date.now() + SECONDS * 1000;
    let ok = 0;
    let failed = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: CLIENTS }, async (_, c) => {
        for (let i = 0; Date.now() < end; i++) {
          const s = await one(c, i);
          if (s < 300) ok++;
          else failed++;
        }
      }),
    );
    const s = (performance.now() - t0) / 1000;
    console.log(`${what}: ${(ok / s).toFixed(1)}/s, ${failed} failed, ${((commands - from) / (ok + failed)).toFixed(2)} commands per request (all, bookkeeping and idle included; idle before: ${idle.toFixed(1)}/s)`);
  };
  const req = async (method: string, path: string, body: unknown, type = 'application/json') => {
    const r = await fetch(gw.url + path, { method, headers: { authorization: auth, 'content-type': type }, body: JSON.stringify(body) });
    await r.text();
    return r.status;
  };
  await phase('create', async (c, i) => {
    const name = `p-${c}-${i}`;
    const s = await req('POST', PERSONS, { metadata: { name }, spec: { name, age: i % 100 } });
    if (s === 201) names.push(name);
    return s;
  });
  await phase('merge patch', async (c, i) => req('PATCH', `${PERSONS}/${names[(c * 7919 + i * 31) % names.length]}`, { spec: { age: i % 100 } }, 'application/merge-patch+json'));
  await gw.close();
}

void main();
