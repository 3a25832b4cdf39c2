/**
 * A gateway process killed with SIGKILL in the middle of concurrent writes loses nothing from
 * the change feed: after a restart, the feed (read from its start, holes of the dead writer
 * repaired) folds into exactly the stored objects, carries every acknowledged write once, and
 * its positions only go up. Both stores.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ChangeEvent } from '../../src/store/types.js';
import { freshMongoUrl, startTestGateway, STORES } from '../helpers/gateway.js';
import { MERGE, person, PERSONS, sleep, startGatewayProcess } from '../watch/helpers.js';
import { adminAuth } from '../helpers/gateway.js';

async function attempt(url: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  try {
    const res = await fetch(url + path, {
      method,
      headers: { authorization: adminAuth, 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  } catch {
    return { status: 0, body: undefined }; // the process is gone
  }
}

describe.each(STORES)('kill -9 of a writing gateway (%s)', (kind) => {
  it('leaves a feed that matches the stored objects and holds every acknowledged write', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'svc-crash-'));
    const mongodbUrl = kind === 'mongodb' ? freshMongoUrl() : undefined;
    const child = await startGatewayProcess({ dataDir, mongodbUrl });
    const acked = new Set<string>();
    let dead = false;
    const worker = async (k: number) => {
      for (let i = 0; !dead; i++) {
        const name = `c-${k}-${i}`;
        const c = await attempt(child.url, 'POST', PERSONS, person(name));
        if (c.status !== 201) continue;
        acked.add(`ADDED ${name}@${c.body.metadata.version}`);
        const p = await attempt(child.url, 'PATCH', `${PERSONS}/c-${k}-${Math.floor(i / 2)}`, { spec: { age: i % 100 } }, MERGE);
        if (p.status === 200) acked.add(`MODIFIED ${p.body.metadata.name}@${p.body.metadata.version}`);
        if (i % 3 === 2) {
          const d = await attempt(child.url, 'DELETE', `${PERSONS}/c-${k}-${i - 1}`);
          if (d.status === 200) acked.add(`DELETED c-${k}-${i - 1}`);
        }
      }
    };
    const workers = Array.from({ length: 6 }, (_, k) => worker(k));
    await sleep(1500);
    child.proc.kill('SIGKILL');
    await new Promise((r) => child.proc.once('exit', r));
    dead = true;
    await Promise.all(workers);
    expect(acked.size).toBeGreaterThan(10);

    // Restart on the same data and read the whole feed.
    const gw = await startTestGateway(kind, { dataDir, mongodbUrl });
    try {
      const entry = gw.registry.find('people.example.com', 'v1alpha1', 'persons')!;
      const feed: ChangeEvent[] = [];
      const stop = await entry.store.watch('0', (e) => feed.push(e));
      const stored = async () =>
        new Map(
          (await entry.store.list({ where: [], sort: [{ index: 'metadata.name', direction: 'asc' }], offset: 0 })).items
            .filter((o) => o.metadata.name.startsWith('c-'))
            .map((o) => [o.metadata.name, o.metadata.version]),
        );
      const fold = () => {
        const s = new Map<string, number | undefined>();
        for (const e of feed) {
          if (!e.object.metadata.name.startsWith('c-')) continue;
          if (e.type === 'DELETED') s.delete(e.object.metadata.name);
          else s.set(e.object.metadata.name, e.object.metadata.version);
        }
        return s;
      };
      const want = await stored();
      const same = () => {
        const got = fold();
        return got.size === want.size && [...want].every(([n, v]) => got.get(n) === v);
      };
      // A dead writer's pending entries are repaired once its lease is seen to stand still.
      for (let i = 0; i < 300 && !same(); i++) await sleep(50);
      stop();
      expect(Object.fromEntries(fold())).toEqual(Object.fromEntries(want));
      const seen = feed.map((e) => (e.type === 'DELETED' ? `DELETED ${e.object.metadata.name}` : `${e.type} ${e.object.metadata.name}@${e.object.metadata.version}`));
      for (const a of acked) expect(seen, `acknowledged write ${a} in the feed`).toContain(a);
      const present = seen.filter((s) => !s.startsWith('DELETED'));
      expect(new Set(present).size).toBe(present.length);
      const rvs = feed.map((e) => BigInt(e.resourceVersion));
      for (let i = 1; i < rvs.length; i++) expect(rvs[i]! > rvs[i - 1]!).toBe(true);
    } finally {
      await gw.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});
