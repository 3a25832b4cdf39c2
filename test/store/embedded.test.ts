/**
 * The embedded (SQLite) store: the shared contract suite, plus what only this adapter promises
 * (file layout, WAL durability across kill -9, index-answered query plans, error mapping).
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { createEmbeddedStore, EmbeddedModelStore } from '../../src/store/embedded/index.js';
import { READ_SQL, RETENTION_SQL } from '../../src/store/embedded/changes.js';
import { toStoreError } from '../../src/store/embedded/sqlite.js';
import type { IndexBuildProgress, IndexRequirement, ModelStore, Store, SortTerm, StoreQuery } from '../../src/store/types.js';
import { BASE, BASE_TEXT, bump, expectStoreError, ix, makeModel, names, query, req, SIZE, until, widget } from './contract.js';
import { runStoreContract } from './contract.js';
import { crashModel } from './fixtures/embedded-writer.js';

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = resolve(here, '../..');

const tempDirs: string[] = [];
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-embedded-'));
  tempDirs.push(dir);
  return dir;
}

runStoreContract('embedded', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-embedded-contract-'));
  // Small rebuild batches, so writes interleave with a rebuild as they do on larger data.
  const store = await createEmbeddedStore({ dataDir: dir, rebuildBatchSize: 100 });
  return {
    store,
    reopen: () => createEmbeddedStore({ dataDir: dir }),
    cleanup: async () => {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
});

describe('embedded store specifics', () => {
  const open: Store[] = [];
  const openStore = async (dataDir: string, busyTimeoutMs?: number) => {
    const s = await createEmbeddedStore(busyTimeoutMs === undefined ? { dataDir } : { dataDir, busyTimeoutMs });
    open.push(s);
    return s;
  };
  const internals = (ms: ModelStore): EmbeddedModelStore => {
    expect(ms).toBeInstanceOf(EmbeddedModelStore);
    return ms as EmbeddedModelStore;
  };

  afterEach(async () => {
    for (const s of open.splice(0)) await s.close();
    for (const d of tempDirs.splice(0)) await rm(d, { recursive: true, force: true });
  });

  it('creates the data directory and a WAL-mode svc.sqlite', async () => {
    const dir = join(await tempDir(), 'not', 'yet', 'there');
    const store = await openStore(dir);
    expect(store.kind).toBe('embedded');
    expect(existsSync(join(dir, 'svc.sqlite'))).toBe(true);
    const peek = new Database(join(dir, 'svc.sqlite'), { readonly: true });
    try {
      expect(peek.pragma('journal_mode', { simple: true })).toBe('wal');
    } finally {
      peek.close();
    }
  });

  it('acknowledged writes survive kill -9 of the writing process', async () => {
    const dir = await tempDir();
    const child = spawn(process.execPath, ['--import', 'tsx', join(here, 'fixtures/embedded-writer.ts')], {
      cwd: repoRoot,
      env: { ...process.env, SVC_WRITER_DIR: dir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const acked: string[] = [];
    let stderr = '';
    let buf = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<NodeJS.Signals | null>((res) => child.on('exit', (_code, sig) => res(sig)));
    await new Promise<void>((res, rej) => {
      child.stdout.on('data', (d: Buffer) => {
        buf += d.toString();
        const lines = buf.split('\n');
        buf = lines.pop()!;
        for (const l of lines) if (l.startsWith('ack ')) acked.push(l.slice(4));
        if (acked.length >= 500) {
          child.kill('SIGKILL'); // mid-stream: the child is still writing
          res();
        }
      });
      child.on('exit', () => rej(new Error(`writer exited early: ${stderr}`)));
    });
    expect(await exited).toBe('SIGKILL');

    const ms = await (await openStore(dir)).model(crashModel);
    const missing: string[] = [];
    for (const name of acked) if ((await ms.get(name)) === null) missing.push(name);
    expect(missing).toEqual([]);
    const all = await ms.list(query());
    expect(all.total).toBeGreaterThanOrEqual(acked.length);
    // index rows were committed with their objects
    expect(names(await ms.list(query([req('spec.n', 'in', ['499'])])))).toEqual(['t-499']);
  }, 60_000);

  it('data and model slots survive close and reopen', async () => {
    const dir = await tempDir();
    const m1 = makeModel();
    const m2 = makeModel();
    let store = await openStore(dir);
    const a = await store.model(m1);
    const b = await store.model(m2);
    await a.create(widget('x', { color: 'red' }));
    await b.create(widget('y', { color: 'red' }));
    const slots = [internals(a).layout.slot, internals(b).layout.slot];
    expect(slots[0]).not.toBe(slots[1]);
    await store.close();
    await store.close(); // idempotent

    store = await openStore(dir);
    const progress: IndexBuildProgress[] = [];
    const a2 = await store.model(m1, (p) => progress.push(p));
    const b2 = await store.model(m2, (p) => progress.push(p));
    expect(progress).toEqual([]); // fingerprints were recorded: nothing rebuilt
    expect([internals(a2).layout.slot, internals(b2).layout.slot]).toEqual(slots);
    expect(names(await a2.list(query([req('spec.color', 'in', ['red'])])))).toEqual(['x']);
    expect(names(await b2.list(query([req('spec.color', 'in', ['red'])])))).toEqual(['y']);
  });

  it('an index that becomes a text index rebuilds nothing here (its values are the same)', async () => {
    const dir = await tempDir();
    const store = await openStore(dir);
    const m = makeModel();
    await (await store.model(m)).create(widget('x', { color: 'red' }));
    const progress: IndexBuildProgress[] = [];
    const ms = await store.model(makeModel(BASE_TEXT, m.key), (p) => progress.push(p));
    expect(progress).toEqual([]);
    expect(names(await ms.list(query([req('spec.color', 'in', ['red'])])))).toEqual(['x']);
  });

  it('filtered and sorted pages are answered from indexes', async () => {
    const store = await openStore(await tempDir());
    const ms = internals(await store.model(makeModel()));
    for (let i = 0; i < 300; i++) {
      await ms.create(
        widget(
          `p-${i}`,
          { slug: `s-${i}`, tags: [`t${i % 5}`, `t${i % 3}`], color: ['red', 'blue', 'green'][i % 3]! },
          { labels: i % 2 ? { app: 'web' } : { app: 'db' }, ts: new Date(Date.UTC(2024, 0, 1, 0, i)).toISOString() },
        ),
      );
    }
    const ts = { index: 'metadata.creationTimestamp', direction: 'desc' } as const;
    const queries: StoreQuery[] = [
      query([], [ts], 0, 20),
      query([req('metadata.labels', 'in', ['app=web'])], [ts], 20, 20),
      query([req('spec.tags', 'in', ['t4']), req('spec.color', 'notin', ['red'])], [ts], 0, 10),
      query([req('spec.color', 'exists')], [{ index: 'spec.color', direction: 'asc' }], 0, 10),
      query([req('metadata.labels', 'notin', ['app'])], [], 0, 10),
      query([req('spec.slug', 'in', ['s-7', 's-8'])], [ts], 0, 10), // selective: driven by the side table
    ];
    for (const q of queries) {
      const plan = ms.explain(q);
      // A bare "SCAN <table>" reads every row of the table without an index.
      const fullScans = plan.filter((l) => /^SCAN (o|i_\d+)$/.test(l.trim()));
      expect(fullScans, plan.join('\n')).toEqual([]);
      expect(plan.join('\n')).toMatch(/USING (COVERING )?INDEX|USING PRIMARY KEY/);
    }
    // the default list order walks the creationTimestamp index instead of sorting
    expect(ms.explain(queries[0]!).join('\n')).not.toMatch(/TEMP B-TREE/);
    // a selective filter drives from the side table; a broad one walks the sort index and probes
    expect(ms.explain(queries[5]!).join('\n')).toMatch(/LIST SUBQUERY[\s\S]*SEARCH i_\d+ USING/);
    expect(ms.explain(queries[1]!).join('\n')).toMatch(/SCAN o USING (COVERING )?INDEX x_[\s\S]*CORRELATED/);
    // and the plans answer correctly
    const r = await ms.list(queries[1]!);
    expect(r.total).toBe(150);
    expect(names(r)[0]).toBe('p-259');
    // the requirement driven from is the one with the fewest rows, in either order; the first on a tie
    const broad = req('metadata.labels', 'in', ['app=web']); // 150
    const color = req('spec.color', 'in', ['red']); // 100
    const slug = req('spec.slug', 'in', ['s-7', 's-9']); // 2
    const pick = (reqs: IndexRequirement[]) =>
      (internals(ms) as unknown as { pickDriver(r: IndexRequirement[]): { driver: IndexRequirement } }).pickDriver(reqs).driver;
    expect(pick([broad, slug])).toBe(slug);
    expect(pick([slug, broad])).toBe(slug);
    expect(pick([broad, color, slug])).toBe(slug);
    expect(pick([broad, color])).toBe(color);
    const blue = req('spec.color', 'in', ['blue']); // 100 too
    expect(pick([color, blue])).toBe(color);
    expect(pick([blue, color])).toBe(blue);
    const both = await ms.list(query([broad, slug], [ts], 0, 10));
    expect(names(both)).toEqual(['p-9', 'p-7']);
    expect(both.total).toBe(2);
    // Driven from few rows, a page reads every match (no count query, no LIMIT): the total and
    // every page, the last ones partly or wholly past the end, equal those of an unpaged list.
    const twelve = req('spec.slug', 'in', Array.from({ length: 12 }, (_, i) => `s-${i + 1}`)); // 6 of them with app=web
    const page4 = (offset: number) => query([broad, twelve], [ts], offset, 4);
    const plan = (q: StoreQuery) => (internals(ms) as unknown as { planPage(q: StoreQuery): { sql: string; every?: true } }).planPage(q);
    expect(plan(page4(0)).every).toBe(true);
    expect(plan(page4(0)).sql).not.toMatch(/LIMIT/);
    // a dense match (a third of all objects) is still probed along the sort index, with a LIMIT
    expect(plan(query([broad, color], [ts], 0, 4)).every).toBeUndefined();
    expect(plan(query([broad, color], [ts], 0, 4)).sql).toMatch(/LIMIT/);
    const expected = (await ms.list(query([broad, twelve], [ts]))).items.map((o) => o.metadata.name);
    expect(expected).toEqual(['p-11', 'p-9', 'p-7', 'p-5', 'p-3', 'p-1']);
    for (const offset of [0, 4, 6, 8]) {
      const page = await ms.list(page4(offset));
      expect(page.total).toBe(6);
      expect(names(page)).toEqual(expected.slice(offset, offset + 4));
    }
    // A lone selective `in` beside requirements it doesn't drive is bounded the same way: one
    // query yields the page and the total (no count pass first).
    const lone = (offset: number) => query([twelve, req('spec.color', 'notin', ['red'])], [ts], offset, 3);
    expect(plan(lone(0)).every).toBe(true);
    const loneAll = (await ms.list(query(lone(0).where, [ts]))).items.map((o) => o.metadata.name);
    expect(loneAll).toHaveLength(8); // s-1 … s-12 without the red ones (i % 3 === 0)
    for (const offset of [0, 3, 6, 9]) {
      const page = await ms.list(lone(offset));
      expect(page.total).toBe(8);
      expect(names(page)).toEqual(loneAll.slice(offset, offset + 3));
    }
  });

  it('a page\'s exact total is counted from indexes only: along the side table when a selector drives, never reading an object row', async () => {
    const store = await openStore(await tempDir());
    const ms = internals(await store.model(makeModel()));
    for (let i = 0; i < 300; i++) {
      await ms.create(
        widget(`c-${String(i).padStart(3, '0')}`, { tags: [`t${i % 5}`, `t${i % 3}`], ...(i % 4 ? { color: ['red', 'blue', 'green'][i % 3]! } : {}) }, {
          labels: i % 2 ? { app: 'web' } : { app: 'db' },
        }),
      );
    }
    const web = req('metadata.labels', 'in', ['app=web']);
    const tags = req('spec.tags', 'in', ['t1', 't4']);
    const cases: { where: IndexRequirement[]; alongSide: boolean }[] = [
      { where: [web], alongSide: true },
      { where: [tags], alongSide: true },
      { where: [web, tags], alongSide: true },
      { where: [web, req('spec.color', 'exists')], alongSide: true },
      { where: [web, req('spec.color', 'notexists'), req('spec.tags', 'notin', ['t2'])], alongSide: true },
      { where: [web, req('metadata.name', 'gt', ['c-100']), req('spec.color', 'gte', ['green'])], alongSide: true },
      { where: [req('spec.color', 'exists')], alongSide: false },
      { where: [req('metadata.labels', 'notin', ['app=web'])], alongSide: false },
    ];
    for (const { where, alongSide } of cases) {
      const plan = ms.explainCount(where);
      const text = plan.join('\n');
      // The object table is only ever read through a covering index (name or sort column);
      // a SEARCH/SCAN of it otherwise, or by row id, reads the object rows.
      for (const line of plan.filter((l) => /^(SEARCH|SCAN) o\b/.test(l.trim()))) expect(line, text).toMatch(/USING COVERING INDEX/);
      expect(plan.filter((l) => /^SCAN (o|i_\d+)$/.test(l.trim())), text).toEqual([]);
      if (alongSide) {
        expect(text, text).toMatch(/^SEARCH d USING PRIMARY KEY \(k=\? AND value=\?/m);
        expect(text, text).not.toMatch(/\bo\b/);
      }
      // and the count is the number of matches of the unpaged list
      const all = await ms.list(query(where));
      const page = await ms.list(query(where, [], 0, 2));
      expect(page.total, text).toBe(all.items.length);
    }
  });

  it('a keyset page is read from the sort index at its key: an index range per branch, no sort, no scan of the rows before it', async () => {
    const store = await openStore(await tempDir());
    const ms = internals(await store.model(makeModel()));
    for (let i = 0; i < 2400; i++) {
      await ms.create(
        widget(`p-${String(i).padStart(4, '0')}`, { color: ['red', 'blue', 'green'][i % 3]!, tags: [`t${i % 5}`] }, {
          labels: i % 2 ? { app: 'web' } : { app: 'db' },
          ts: new Date(Date.UTC(2024, 0, 1, 0, i % 50)).toISOString(),
        }),
      );
    }
    const ts = { index: 'metadata.creationTimestamp', direction: 'desc' } as const;
    const web = req('metadata.labels', 'in', ['app=web']); // 1,200 rows: more than a driven page reads
    const cases: { where: IndexRequirement[]; sort: SortTerm[] }[] = [
      { where: [], sort: [ts, { index: 'metadata.name', direction: 'asc' }] },
      { where: [web], sort: [ts, { index: 'metadata.name', direction: 'asc' }] },
      { where: [web], sort: [{ index: 'spec.color', direction: 'asc' }, { index: 'metadata.name', direction: 'asc' }] },
      { where: [], sort: [{ index: 'metadata.name', direction: 'desc' }] },
    ];
    for (const { where, sort } of cases) {
      const first = await ms.page({ where, sort, limit: 20 });
      // deep in the list: the key of the 150th match
      let after = first.keys.at(-1)!;
      for (let n = 0; n < 6; n++) after = (await ms.page({ where, sort, limit: 20, after })).keys.at(-1)!;
      const plans = ms.explainPage({ where, sort, limit: 20, after });
      expect(plans.length).toBeGreaterThan(0);
      for (const plan of plans) {
        const text = plan.join('\n');
        // each branch is a range of the sort index (SEARCH … USING INDEX x_… (col=? AND col>?)), read in order
        expect(text, text).toMatch(/SEARCH o USING (COVERING )?(INDEX x_\d+_\d+|PRIMARY KEY|INDEX sqlite_autoindex)/);
        expect(text, text).not.toMatch(/TEMP B-TREE/);
        expect(plan.filter((l) => /^SCAN (o|i_\d+)\b/.test(l.trim())), text).toEqual([]);
      }
    }
    // A selective filter (few side-table rows) drives the page from the side table: one query,
    // reading the matches only, whatever the depth.
    const rare = req('spec.tags', 'in', ['t3']); // 480 rows
    const sort: SortTerm[] = [ts, { index: 'metadata.name', direction: 'asc' }];
    let after = (await ms.page({ where: [rare], sort, limit: 20 })).keys.at(-1)!;
    for (let n = 0; n < 10; n++) after = (await ms.page({ where: [rare], sort, limit: 20, after })).keys.at(-1)!;
    const driven = ms.explainPage({ where: [rare], sort, limit: 20, after });
    expect(driven).toHaveLength(1);
    expect(driven[0]!.join('\n')).toMatch(/SEARCH i_\d+ USING/);
    expect(driven[0]!.filter((l) => /^SCAN (o|i_\d+)$/.test(l.trim()))).toEqual([]);
  });

  it('the change log\'s read and retention statements walk only the model\'s own index range, with or without planner statistics', async () => {
    const dir = await tempDir();
    const store = await openStore(dir);
    const a = await store.model(makeModel());
    const b = await store.model(makeModel());
    for (let i = 0; i < 200; i++) await (i % 2 ? a : b).create(widget(`c-${i}`));
    const peek = new Database(join(dir, 'svc.sqlite'));
    try {
      for (const stats of [false, true]) {
        if (stats) peek.exec('ANALYZE'); // what PRAGMA optimize does once the table has grown
        for (const [name, sql] of Object.entries({ read: READ_SQL, ...RETENTION_SQL })) {
          const params = Array.from(sql.match(/\?/g)!, () => 1);
          const plan = (peek.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[]).map((r) => r.detail);
          // one search of svc_changes_slot within the slot (never the rowid range, which spans every model)
          expect(plan, `${name}, statistics ${stats}`).toHaveLength(1);
          expect(plan[0], `${name}, statistics ${stats}`).toMatch(/^SEARCH svc_changes USING (COVERING )?INDEX svc_changes_slot \(slot=\?/);
          // the age walk starts at the floor, not at the model's first row ever
          if (name === 'firstYoung' || name === 'read') expect(plan[0]).toContain('(slot=? AND pos>?)');
        }
      }
    } finally {
      peek.close();
    }
  });

  it('a change stamped earlier than the one before it (wall clock stepped back) expires nothing younger', async () => {
    const dir = await tempDir();
    const model = makeModel();
    const retention = { maxEvents: 1_000_000, maxAgeMs: 3600_000 };
    let store = await createEmbeddedStore({ dataDir: dir, retention });
    let ms = await store.model(model);
    const before = await ms.resourceVersion();
    let obj = await ms.create(widget('w'));
    for (let v = 2; v <= 20; v++) obj = await ms.update(bump(obj, { size: v }), v - 1);
    await store.close();
    const peek = new Database(join(dir, 'svc.sqlite'));
    try {
      peek.prepare('UPDATE svc_changes SET at = 0 WHERE pos = (SELECT MAX(pos) FROM svc_changes)').run();
    } finally {
      peek.close();
    }
    // Reopening runs a retention pass: the 19 changes before the mis-stamped one are young.
    store = await createEmbeddedStore({ dataDir: dir, retention });
    open.push(store);
    ms = await store.model(model);
    const got: number[] = [];
    const stop = await ms.watch(before, (e) => got.push(e.object.metadata.version!));
    for (let i = 0; i < 250 && got.length < 20; i++) await new Promise((r) => setTimeout(r, 20));
    stop();
    expect(got).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
  });

  it('a removed index loses its column, values and physical indexes', async () => {
    const dir = await tempDir();
    const store = await openStore(dir);
    const key = makeModel().key;
    const withSize = internals(await store.model(makeModel([...BASE, ix('spec.size', SIZE.values, { unique: true })], key)));
    await withSize.create(widget('a', { size: 1 }));
    const { slot, secondary } = withSize.layout;
    const k = secondary.find((s) => s.name === 'spec.size')!.k;
    await store.model(makeModel(BASE, key));

    const peek = new Database(join(dir, 'svc.sqlite'), { readonly: true });
    try {
      const cols = (peek.prepare(`PRAGMA table_info(o_${slot})`).all() as { name: string }[]).map((c) => c.name);
      expect(cols).not.toContain(`s_${k}`);
      const idx = peek.prepare(`SELECT name FROM sqlite_master WHERE type = 'index' AND name IN (?, ?)`).all(
        `x_${slot}_${k}`,
        `u_${slot}_${k}`,
      );
      expect(idx).toEqual([]);
      expect(peek.prepare(`SELECT COUNT(*) FROM i_${slot} WHERE k = ?`).pluck().get(k)).toBe(0);
    } finally {
      peek.close();
    }
  });

  it('an interrupted rebuild is redone on the next model()', async () => {
    const store = await createEmbeddedStore({ dataDir: await tempDir(), rebuildBatchSize: 10 });
    open.push(store);
    const key = makeModel().key;
    const ms = await store.model(makeModel(BASE, key));
    for (let i = 0; i < 35; i++) await ms.create(widget(`o-${String(i).padStart(2, '0')}`, { size: i }));

    const broken = ix('spec.size', (o) => {
      if (o.metadata.name === 'o-25') throw new Error('boom');
      return SIZE.values(o);
    });
    await expect(store.model(makeModel([...BASE, broken], key))).rejects.toThrow('boom');

    const progress: IndexBuildProgress[] = [];
    const fixed = await store.model(makeModel([...BASE, SIZE], key), (p) => progress.push(p));
    expect(progress.map((p) => p.processed)).toEqual([10, 20, 30, 35]);
    expect(names(await fixed.list(query([req('spec.size', 'in', ['25', '3'])])))).toEqual(['o-03', 'o-25']);
  });

  it('a unique index added over duplicate values fails with UniqueViolation', async () => {
    const store = await openStore(await tempDir());
    const key = makeModel().key;
    const ms = await store.model(makeModel(BASE, key));
    await ms.create(widget('a', { size: 1 }));
    await ms.create(widget('b', { size: 1 }));
    await expectStoreError(
      store.model(makeModel([...BASE, ix('spec.size', SIZE.values, { unique: true })], key)),
      'UniqueViolation',
      'spec.size',
    );
  });

  it('a unique index stays enforced while it is rebuilt under a new definition', async () => {
    const store = await createEmbeddedStore({ dataDir: await tempDir(), rebuildBatchSize: 10 });
    open.push(store);
    const key = makeModel().key;
    const old = await store.model(makeModel(BASE, key));
    for (let i = 0; i < 200; i++) await old.create(widget(`u-${String(i).padStart(3, '0')}`, { slug: `s-${i}` }));
    const lowerSlug = ix('spec.slug', (o) => [String((o.spec as { slug?: string }).slug ?? '').toLowerCase()].filter(Boolean), {
      unique: true,
      fingerprint: 'func:lower(spec.slug)',
    });
    let progressed = 0;
    const opening = store.model(makeModel(BASE.map((x) => (x.d.name === 'spec.slug' ? lowerSlug : x)), key), () => progressed++);
    // Mid-rebuild (after the first batches): the slug of an object the rebuild has not reached.
    while (progressed < 3) await new Promise((r) => setImmediate(r));
    await expectStoreError(old.create(widget('dup', { slug: 's-190' })), 'UniqueViolation', 'spec.slug');
    const ms = await opening;
    await expectStoreError(ms.create(widget('dup', { slug: 'S-190' })), 'UniqueViolation', 'spec.slug');
    expect(names(await ms.list(query([req('spec.slug', 'in', ['s-190'])])))).toEqual(['u-190']);
    expect((await ms.list(query())).total).toBe(200);
  });

  it('maps SQLite constraint failures the adapter did not foresee onto store errors, not 500s', () => {
    const db = new Database(':memory:');
    try {
      db.exec('CREATE TABLE t (a TEXT UNIQUE, b INTEGER CHECK (b > 0))');
      db.prepare('INSERT INTO t VALUES (?, ?)').run('x', 1);
      const fail = (sql: string, ...args: unknown[]) => {
        try {
          db.prepare(sql).run(...args);
        } catch (e) {
          return toStoreError(e);
        }
        throw new Error('expected a constraint failure');
      };
      expect(fail('INSERT INTO t VALUES (?, ?)', 'x', 2)).toMatchObject({ name: 'StoreError', code: 'UniqueViolation' });
      expect(fail('INSERT INTO t VALUES (?, ?)', 'y', -1)).toMatchObject({ name: 'StoreError', code: 'Conflict' });
    } finally {
      db.close();
    }
  });

  it('a closed store is Unavailable', async () => {
    const store = await createEmbeddedStore({ dataDir: await tempDir() });
    const ms = await store.model(makeModel());
    await store.close();
    await expectStoreError(store.ping(), 'Unavailable');
    await expectStoreError(ms.get('a'), 'Unavailable');
    await expectStoreError(ms.create(widget('a')), 'Unavailable');
    await expectStoreError(ms.list(query()), 'Unavailable');
  });

  it('concurrent creates share one commit, each with its own outcome; the feed holds exactly the stored ones', async () => {
    const dir = await tempDir();
    const store = await openStore(dir);
    const ms = await store.model(makeModel());
    await ms.create(widget('taken', { slug: 'held' }));
    const events: string[] = [];
    const unsub = await ms.watch(undefined, (e) => events.push(`${e.type} ${e.object.metadata.name}`));
    // One turn of the event loop: ten creates, one duplicate name, one taken unique value, and
    // two that collide with each other (the second loses).
    const results = await Promise.allSettled([
      ms.create(widget('g-0')),
      ms.create(widget('taken')),
      ms.create(widget('g-1', { slug: 'held' })),
      ms.create(widget('g-2', { slug: 'mine' })),
      ms.create(widget('g-3', { slug: 'mine' })),
      ...Array.from({ length: 5 }, (_, i) => ms.create(widget(`g-${4 + i}`))),
    ]);
    const outcome = results.map((r) => (r.status === 'fulfilled' ? 'ok' : (r.reason as { code: string }).code));
    expect(outcome).toEqual(['ok', 'AlreadyExists', 'UniqueViolation', 'ok', 'UniqueViolation', 'ok', 'ok', 'ok', 'ok', 'ok']);
    const stored = ['g-0', 'g-2', 'g-4', 'g-5', 'g-6', 'g-7', 'g-8'];
    expect(names(await ms.list(query([], [{ index: 'metadata.name', direction: 'asc' }])))).toEqual(['g-0', 'g-2', 'g-4', 'g-5', 'g-6', 'g-7', 'g-8', 'taken']);
    expect(await ms.get('g-1')).toBeNull();
    expect((await ms.get('taken'))!.spec).toEqual({ slug: 'held' });
    // The losers left nothing behind: their values are free for others.
    await ms.create(widget('g-9', { slug: 'x' }));
    await ms.remove('g-2', 1);
    await ms.create(widget('g-10', { slug: 'mine' }));
    await until(() => events.length === 10, 5000);
    expect(events.slice(0, 7)).toEqual(stored.map((n) => `ADDED ${n}`));
    unsub();
  });

  it('a write blocked by another process lock is Unavailable, then succeeds', async () => {
    const dir = await tempDir();
    const store = await openStore(dir, 50);
    const ms = await store.model(makeModel());
    const other = new Database(join(dir, 'svc.sqlite'));
    try {
      other.exec('BEGIN IMMEDIATE');
      await expectStoreError(ms.create(widget('a')), 'Unavailable');
      expect(await ms.get('a')).toBeNull(); // reads are not blocked in WAL mode
      other.exec('ROLLBACK');
    } finally {
      other.close();
    }
    await ms.create(widget('a'));
    expect(await ms.get('a')).not.toBeNull();
  });
});
