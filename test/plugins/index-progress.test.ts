/**
 * A plugin is not STARTED until its indexes are built: enabling a plugin whose new version adds
 * an index over a large collection (50,000 objects, embedded store) moves its Plugin object
 * through STARTING, with index-build progress in `status.indexes` and in the log, to STARTED;
 * the model is served only then, with the index. (On MongoDB the same lifecycle code runs; the
 * store contract suite covers its batched progress, test/store/contract.ts.)
 */
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { call, startTestGateway, type StoreKind, type TestGateway } from '../helpers/gateway.js';
import { openWatch } from '../watch/helpers.js';
import { auth, manifest, PLUGINS, pluginsDir, waitPhase, type PluginsDir } from './fixtures.js';

const ITEMS = '/apis/bulk.example.com/v1/items';
const MERGE = { 'content-type': 'application/merge-patch+json' };
const SIZES: Partial<Record<StoreKind, number>> = { embedded: 50_000 };

describe.each(Object.entries(SIZES) as [StoreKind, number][])('index-build progress while STARTING (%s, %i objects)', (kind, n) => {
  let dir: PluginsDir;
  let gw: TestGateway;
  const lines: any[] = [];
  afterAll(async () => {
    await gw?.dispose();
    await dir?.remove();
  });

  it('goes STARTING → STARTED, reporting progress, and serves the new index only then', async () => {
    dir = await pluginsDir();
    await dir.write('bulk', { 'plugin.yaml': manifest({ name: 'bulk', kind: 'Item' }) });
    const logger = pino(
      { level: 'info' },
      new Writable({
        write(chunk, _enc, done) {
          for (const l of String(chunk).split('\n')) if (l) lines.push(JSON.parse(l));
          done();
        },
      }),
    );
    gw = await startTestGateway(kind, { pluginsDir: dir.dir, logger });
    // Fill the collection straight through the store (REST would only make the test slow).
    const store = gw.registry.find('bulk.example.com', 'v1', 'items')!.store;
    const ts = new Date().toISOString();
    for (let i = 0; i < n; i++) {
      await store.create({
        apiVersion: 'bulk.example.com/v1',
        kind: 'Item',
        metadata: { name: `item-${String(i).padStart(6, '0')}`, version: 1, creationTimestamp: ts },
        spec: { title: `t${i}`, n: i % 100 },
      });
    }
    expect((await call(gw, 'GET', `${ITEMS}?fieldSelector=spec.n=7`)).status).toBe(400); // not indexed yet

    expect((await call(gw, 'PATCH', `${PLUGINS}/bulk`, { spec: { enabled: false } }, MERGE)).status).toBe(200);
    await waitPhase(gw, 'bulk', 'STOPPED');
    await dir.write('bulk', { 'plugin.yaml': manifest({ name: 'bulk', kind: 'Item', version: '1.1.0', indexes: ['{ name: spec.n, path: spec.n }'] }) });

    const watch = openWatch(gw, '?fieldSelector=metadata.name%3Dbulk', auth, PLUGINS);
    await watch.opened;
    await watch.until((ev) => ev.some((e) => e.type === 'ADDED'), 'the Plugin object');
    const served: number[] = [];
    expect((await call(gw, 'PATCH', `${PLUGINS}/bulk`, { spec: { enabled: true } }, MERGE)).status).toBe(200);
    // While it starts, the model is not served (404); once it is, its new index is complete.
    const early: unknown[] = [];
    while (!watch.events.some((e) => e.object?.status?.phase === 'STARTED')) {
      const status = (await call(gw, 'GET', `${ITEMS}?size=1`)).status;
      served.push(status);
      if (status !== 404) {
        const r = await call(gw, 'GET', `${ITEMS}?fieldSelector=spec.n=7&size=1`);
        if (r.status !== 200 || r.body.total !== n / 100) early.push({ status: r.status, total: r.body.total });
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    watch.close();
    const statuses = watch.events.filter((e) => e.type === 'MODIFIED').map((e) => e.object.status);
    const phases = statuses.map((s) => s.phase);
    expect(phases.at(-1)).toBe('STARTED');
    const firstStarting = phases.indexOf('STARTING');
    expect(firstStarting).toBeGreaterThanOrEqual(0);
    expect(phases.slice(firstStarting).every((p, i, all) => p === 'STARTING' || i === all.length - 1)).toBe(true);
    const progress = statuses
      .filter((s) => s.phase === 'STARTING' && s.indexes)
      .map((s) => s.indexes.find((x: any) => x.index === 'spec.n')?.processed);
    expect(progress.length).toBeGreaterThan(1);
    expect(progress.some((p) => p > 0 && p < n), `intermediate progress in ${JSON.stringify(progress)}`).toBe(true);
    expect(progress.at(-1)).toBe(n);
    for (let i = 1; i < progress.length; i++) expect(progress[i]).toBeGreaterThanOrEqual(progress[i - 1]);
    expect(served.filter((s) => s !== 404 && s !== 200)).toEqual([]);
    expect(served[0]).toBe(404);
    expect(early).toEqual([]);
    expect(lines.some((l) => l.msg === 'building index' && l.plugin === 'bulk' && l.index === 'spec.n' && l.processed > 0)).toBe(true);

    const byN = await call(gw, 'GET', `${ITEMS}?fieldSelector=spec.n=7&size=3&sort=metadata.name,asc`);
    expect(byN.status).toBe(200);
    expect(byN.body.total).toBe(n / 100);
    expect(byN.body.items.map((x: any) => x.metadata.name)).toEqual(['item-000007', 'item-000107', 'item-000207']);
  }, 600_000);
});
