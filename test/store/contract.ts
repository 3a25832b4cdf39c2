/**
 * The store contract suite: every adapter (embedded, mongo) runs it through `runStoreContract`.
 * It uses only the port (src/store/types.ts), never adapter internals.
 *
 * Harness rules for `open()`:
 *  - returns a fresh, empty-enough store (each test uses its own random model key);
 *  - `reopen`, when given, opens a NEW store over the same data. The suite closes the first
 *    store before calling it and closes the reopened store itself;
 *  - `cleanup` closes the store it opened (which may already be closed, so `close()` must be
 *    idempotent) and removes the data.
 */
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compareKeys, keysetTerms } from '../../src/store/keyset.js';
import { StoreError, type StoreErrorCode } from '../../src/store/errors.js';
import { deliveryWindowMs } from '../../src/store/feed/index.js';
import type {
  ChangeEvent,
  FeedGate,
  IndexBuildProgress,
  IndexDescriptor,
  IndexRequirement,
  ModelStore,
  SortKey,
  SortTerm,
  StorageModel,
  Store,
  StoreListResult,
  StoreQuery,
} from '../../src/store/types.js';
import type { ApiObject } from '../../src/store/object.js';

export interface StoreHarness {
  store: Store;
  reopen?: () => Promise<Store>;
  cleanup: () => Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// The test model: written by hand so the suite doesn't depend on the registry. Exported for
// adapter-specific tests.

interface WidgetSpec {
  slug?: string;
  tags?: string[];
  codes?: string[];
  color?: string;
  size?: number;
}

export interface IndexDef {
  d: IndexDescriptor;
  values: (o: ApiObject) => string[];
}

const spec = (o: ApiObject) => (o.spec ?? {}) as WidgetSpec;
const one = (v: string | undefined) => (v === undefined ? [] : [v]);
const many = (v: string[] | undefined) => [...new Set(v ?? [])];

export const ix = (
  name: string,
  values: (o: ApiObject) => string[],
  opts: Partial<Omit<IndexDescriptor, 'name'>> = {},
): IndexDef => ({
  // A path index unless the options give a computed (func:) fingerprint without a path.
  d: { name, unique: false, order: 'ASC', fingerprint: `path:${name}`, path: name, ...opts },
  values,
});

export const BASE: IndexDef[] = [
  ix('metadata.name', (o) => [o.metadata.name], { unique: true }),
  ix('metadata.labels', (o) => Object.entries(o.metadata.labels ?? {}).flatMap(([k, v]) => [k, `${k}=${v}`])),
  ix('metadata.creationTimestamp', (o) => one(o.metadata.creationTimestamp), { order: 'DESC' }),
  ix('metadata.deletionTimestamp', (o) => one(o.metadata.deletionTimestamp)),
  ix('spec.slug', (o) => one(spec(o).slug), { unique: true }),
  ix('spec.tags', (o) => many(spec(o).tags)),
  // Multi-valued AND unique: no two objects may share any code.
  ix('spec.codes', (o) => many(spec(o).codes), { unique: true }),
  ix('spec.color', (o) => one(spec(o).color)),
];

export const SIZE = ix('spec.size', (o) => (spec(o).size === undefined ? [] : [String(spec(o).size)]));
/** spec.size over a field whose schema type is number (docs/API.md §7): sorts and compares numbers. */
export const SIZE_NUMERIC = ix('spec.size', SIZE.values, { fingerprint: 'path:spec.size|type=number', numeric: true });
/**
 * spec.color as a text index (IndexDescriptor.text: one string field, no array on the way), as
 * the registry declares it for a `string` field: a store may query the field itself (MongoDB
 * does, store/mongo/document.ts nativePath); every answer must stay the same.
 */
export const COLOR_TEXT = ix('spec.color', (o) => one(spec(o).color), { text: true });
export const BASE_TEXT: IndexDef[] = BASE.map((x) => (x.d.name === 'spec.color' ? COLOR_TEXT : x));
/** Same index name as spec.color, different derivation (and so a different fingerprint). */
const COLOR_UPPER = ix('spec.color', (o) => one(spec(o).color?.toUpperCase()), {
  fingerprint: 'func:upper(spec.color)',
  path: undefined,
});

const newKey = () => `test.example.com/v1/widgets-${randomBytes(5).toString('hex')}`;

export function makeModel(defs: IndexDef[] = BASE, key = newKey()): StorageModel {
  return {
    key,
    indexes: defs.map((x) => x.d),
    indexValues: (o) => Object.fromEntries(defs.map((x) => [x.d.name, x.values(o)])),
  };
}

interface WidgetOpts {
  version?: number;
  labels?: Record<string, string>;
  ts?: string;
  deletionTimestamp?: string;
}

export function widget(name: string, s: WidgetSpec = {}, o: WidgetOpts = {}): ApiObject {
  const metadata: ApiObject['metadata'] = {
    name,
    version: o.version ?? 1,
    creationTimestamp: o.ts ?? '2024-01-01T00:00:00Z',
  };
  if (o.labels) metadata.labels = o.labels;
  if (o.deletionTimestamp) metadata.deletionTimestamp = o.deletionTimestamp;
  return { apiVersion: 'test.example.com/v1', kind: 'Widget', metadata, spec: s };
}

/** The object as an update would send it: same content, next version. */
export const bump = (obj: ApiObject, s: WidgetSpec): ApiObject => ({
  ...obj,
  metadata: { ...obj.metadata, version: (obj.metadata.version ?? 0) + 1 },
  spec: s,
});

// ---------------------------------------------------------------------------------------------
// Helpers

const byName: SortTerm = { index: 'metadata.name', direction: 'asc' };

/** A query as the planner builds it: metadata.name appended as the last sort term. */
export function query(where: IndexRequirement[] = [], sort: SortTerm[] = [], offset = 0, limit?: number): StoreQuery {
  const terms = sort.at(-1)?.index === 'metadata.name' ? sort : [...sort, byName];
  return limit === undefined ? { where, sort: terms, offset } : { where, sort: terms, offset, limit };
}

export const req = (index: string, op: IndexRequirement['op'], values: string[] = []): IndexRequirement => ({
  index,
  op,
  values,
});
export const names = (r: StoreListResult) => r.items.map((o) => o.metadata.name);

export async function expectStoreError(p: Promise<unknown>, code: StoreErrorCode, index?: string): Promise<StoreError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, `expected StoreError ${code}`).toBeInstanceOf(StoreError);
  const se = err as StoreError;
  expect(se.code).toBe(code);
  if (index !== undefined) expect(se.index).toBe(index);
  return se;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits until `cond` holds or `ms` pass; the assertion after it says what was missing. */
export async function until(cond: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
}

async function waitFor(cond: () => boolean, what: string, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

// ---------------------------------------------------------------------------------------------

export function runStoreContract(label: string, open: () => Promise<StoreHarness>): void {
  describe(`store contract: ${label}`, () => {
    let h: StoreHarness;
    let store: Store;
    let reopened: Store | undefined;

    beforeAll(async () => {
      h = await open();
      store = h.store;
    });
    afterAll(async () => {
      await reopened?.close();
      await h?.cleanup();
    });

    it('reports a kind and answers ping', async () => {
      expect(typeof store.kind).toBe('string');
      expect(store.kind.length).toBeGreaterThan(0);
      await expect(store.ping()).resolves.toBeUndefined();
    });

    describe('CRUD and compare-and-set', () => {
      let ms: ModelStore;
      beforeAll(async () => {
        ms = await store.model(makeModel());
      });

      it('creates, reads back every field, and returns the stored object', async () => {
        const obj = widget('full', { slug: 'full', tags: ['a'], color: 'red' }, { labels: { app: 'web' } });
        obj.metadata.annotations = { note: 'x' };
        obj.metadata.finalizers = ['keep'];
        obj.status = { phase: 'Ready', nested: { n: [1, 2, { z: null }] } };
        const created = await ms.create(obj);
        expect(created).toEqual(obj);
        expect(await ms.get('full')).toEqual(obj);
        expect(ms.model.key).toMatch(/^test\.example\.com\/v1\/widgets-/);
      });

      it('get of a missing name is null', async () => {
        expect(await ms.get('does-not-exist')).toBeNull();
      });

      it('create of a taken name throws AlreadyExists and keeps the original', async () => {
        const orig = widget('dup', { color: 'red' });
        await ms.create(orig);
        await expectStoreError(ms.create(widget('dup', { color: 'blue' })), 'AlreadyExists');
        expect(await ms.get('dup')).toEqual(orig);
      });

      it('update with the stored version replaces the object', async () => {
        const v1 = await ms.create(widget('upd', { color: 'red' }));
        const v2 = bump(v1, { color: 'blue' });
        expect(await ms.update(v2, 1)).toEqual(v2);
        expect(await ms.get('upd')).toEqual(v2);
      });

      it('update with a stale version throws Conflict and changes nothing', async () => {
        const v1 = await ms.create(widget('cas', { color: 'red' }));
        const v2 = bump(v1, { color: 'blue' });
        await ms.update(v2, 1);
        await expectStoreError(ms.update(bump(v1, { color: 'green' }), 1), 'Conflict');
        await expectStoreError(ms.update(bump(v2, { color: 'green' }), 3), 'Conflict');
        expect(await ms.get('cas')).toEqual(v2);
        const green = await ms.list(query([req('spec.color', 'in', ['green'])]));
        expect(names(green)).not.toContain('cas');
      });

      it('concurrent updates from the same version: exactly one wins', async () => {
        const v1 = await ms.create(widget('race', { color: 'red' }));
        const results = await Promise.allSettled([
          ms.update(bump(v1, { color: 'blue' }), 1),
          ms.update(bump(v1, { color: 'green' }), 1),
        ]);
        expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
        const rejected = results.filter((r) => r.status === 'rejected') as PromiseRejectedResult[];
        expect(rejected).toHaveLength(1);
        expect((rejected[0]!.reason as StoreError).code).toBe('Conflict');
        const stored = await ms.get('race');
        expect(stored?.metadata.version).toBe(2);
      });

      it('update of a missing object throws NotFound', async () => {
        await expectStoreError(ms.update(widget('ghost', {}, { version: 2 }), 1), 'NotFound');
        expect(await ms.get('ghost')).toBeNull();
      });

      it('remove checks the version, then deletes; the name can be reused', async () => {
        const v1 = await ms.create(widget('rm', { slug: 'rm-slug', color: 'red' }));
        const v2 = bump(v1, { slug: 'rm-slug', color: 'red' });
        await ms.update(v2, 1);
        await expectStoreError(ms.remove('rm', 1), 'Conflict');
        expect(await ms.get('rm')).toEqual(v2);
        await expectStoreError(ms.remove('no-such', 1), 'NotFound');
        await ms.remove('rm', 2);
        expect(await ms.get('rm')).toBeNull();
        await expectStoreError(ms.remove('rm', 2), 'NotFound');
        expect(names(await ms.list(query([req('metadata.name', 'in', ['rm'])])))).toEqual([]);
        // name and unique values are free again
        const again = await ms.create(widget('rm', { slug: 'rm-slug' }));
        expect(await ms.get('rm')).toEqual(again);
      });

      it('index values follow updates and removals', async () => {
        const v1 = await ms.create(widget('follow', { color: 'teal', tags: ['t1', 't2'] }));
        const teal = () => ms.list(query([req('spec.color', 'in', ['teal'])]));
        expect(names(await teal())).toEqual(['follow']);
        const v2 = bump(v1, { color: 'navy', tags: ['t2', 't3'] });
        await ms.update(v2, 1);
        expect(names(await teal())).toEqual([]);
        expect(names(await ms.list(query([req('spec.color', 'in', ['navy'])])))).toEqual(['follow']);
        expect(names(await ms.list(query([req('spec.tags', 'in', ['t1'])])))).toEqual([]);
        expect(names(await ms.list(query([req('spec.tags', 'in', ['t3'])])))).toEqual(['follow']);
        await ms.remove('follow', 2);
        expect(names(await ms.list(query([req('spec.color', 'in', ['navy'])])))).toEqual([]);
        expect(names(await ms.list(query([req('spec.tags', 'in', ['t2'])])))).toEqual([]);
      });
    });

    describe('unique indexes', () => {
      let ms: ModelStore;
      beforeAll(async () => {
        ms = await store.model(makeModel());
      });

      it('single- and multi-valued unique values are enforced on create; nothing is stored', async () => {
        // An object's own repeated value is not a violation.
        await ms.create(widget('u1', { slug: 's1', codes: ['p', 'q', 'p'] }));
        const before = await ms.list(query());

        await expectStoreError(ms.create(widget('u2', { slug: 's2', codes: ['r', 'q'] })), 'UniqueViolation', 'spec.codes');
        await expectStoreError(ms.create(widget('u2', { slug: 's1', codes: ['r'] })), 'UniqueViolation', 'spec.slug');
        expect(await ms.get('u2')).toBeNull();
        expect(await ms.list(query())).toEqual(before);
        // no index values of the failed creates were kept
        expect(names(await ms.list(query([req('spec.codes', 'in', ['r'])])))).toEqual([]);
        expect(names(await ms.list(query([req('spec.slug', 'in', ['s2'])])))).toEqual([]);

        await ms.create(widget('u2', { slug: 's2', codes: ['r', 's'] }));
        // objects without a value never collide
        await ms.create(widget('u3'));
        await ms.create(widget('u4'));
        expect(names(await ms.list(query([req('spec.slug', 'notexists')])))).toEqual(['u3', 'u4']);
      });

      it('unique values are enforced on update; the object is unchanged', async () => {
        const u2 = (await ms.get('u2'))!;
        await expectStoreError(ms.update(bump(u2, { slug: 's2', codes: ['s', 'p'] }), 1), 'UniqueViolation', 'spec.codes');
        await expectStoreError(ms.update(bump(u2, { slug: 's1', codes: ['r', 's'] }), 1), 'UniqueViolation', 'spec.slug');
        expect(await ms.get('u2')).toEqual(u2);
        expect(names(await ms.list(query([req('spec.codes', 'in', ['r'])])))).toEqual(['u2']);
        expect(names(await ms.list(query([req('spec.codes', 'in', ['p'])])))).toEqual(['u1']);
        expect(names(await ms.list(query([req('spec.slug', 'in', ['s1'])])))).toEqual(['u1']);

        // keeping one's own values is fine
        const u1 = (await ms.get('u1'))!;
        await ms.update(bump(u1, { slug: 's1', codes: ['p', 'q', 't'] }), 1);
        // values given up by an update are free again
        await ms.update(bump(u2, { slug: 's2b', codes: ['s'] }), 1);
        await ms.create(widget('u5', { slug: 's2', codes: ['r'] }));
        // values of a removed object are free again
        await ms.remove('u1', 2);
        await ms.create(widget('u6', { slug: 's1', codes: ['p', 't'] }));
        expect(names(await ms.list(query([req('spec.codes', 'in', ['p', 'q', 'r', 's', 't'])])))).toEqual([
          'u2',
          'u5',
          'u6',
        ]);
      });
    });

    // Each list suite runs twice: spec.color kept as index values, and as a text index.
    for (const [variant, defs] of [['', BASE], [' (spec.color a text index)', BASE_TEXT]] as const) {
      describe(`list: requirements, sort, window${variant}`, () => {
        let ms: ModelStore;
        // Each answer below is worked out by hand from this dataset.
        const data = [
          widget('e', { color: 'green' }, { labels: { tier: 'back' }, ts: '2024-01-04T00:00:00Z' }),
          widget(
            'b',
            { slug: 'slug-b', tags: ['y'], color: 'blue' },
            { labels: { app: 'db' }, ts: '2024-01-01T00:00:00Z', deletionTimestamp: '2024-02-01T00:00:00Z' },
          ),
          widget('d', { slug: 'slug-d', tags: ['z', 'x'], color: 'red' }, { labels: {}, ts: '2024-01-05T00:00:00Z' }),
          widget(
            'a',
            { slug: 'slug-a', tags: ['x', 'y'], color: 'red' },
            { labels: { app: 'web', tier: 'front' }, ts: '2024-01-03T00:00:00Z' },
          ),
          widget('c', { tags: [] }, { labels: { app: 'web' }, ts: '2024-01-02T00:00:00Z' }),
        ];
        const find = async (...where: IndexRequirement[]) => names(await ms.list(query(where)));
        const sorted = async (...sort: SortTerm[]) => names(await ms.list(query([], sort)));

        beforeAll(async () => {
          ms = await store.model(makeModel(defs));
          for (const o of data) await ms.create(o);
        });

        it('no requirement lists everything in name order', async () => {
          const r = await ms.list(query());
          expect(names(r)).toEqual(['a', 'b', 'c', 'd', 'e']);
          expect(r.total).toBe(5);
          expect(r.items.find((o) => o.metadata.name === 'a')).toEqual(data[3]);
        });

        it('single-valued index: in, notin, exists, notexists', async () => {
          expect(await find(req('spec.color', 'in', ['red']))).toEqual(['a', 'd']);
          expect(await find(req('spec.color', 'in', ['red', 'blue']))).toEqual(['a', 'b', 'd']);
          expect(await find(req('spec.color', 'in', ['purple']))).toEqual([]);
          expect(await find(req('spec.color', 'notin', ['red']))).toEqual(['b', 'c', 'e']);
          expect(await find(req('spec.color', 'notin', ['red', 'green']))).toEqual(['b', 'c']);
          expect(await find(req('spec.color', 'exists'))).toEqual(['a', 'b', 'd', 'e']);
          expect(await find(req('spec.color', 'notexists'))).toEqual(['c']);
          expect(await find(req('metadata.deletionTimestamp', 'exists'))).toEqual(['b']);
          expect(await find(req('metadata.creationTimestamp', 'in', ['2024-01-02T00:00:00Z']))).toEqual(['c']);
        });

        it('multi-valued index: in = some value, notin = no value', async () => {
          expect(await find(req('spec.tags', 'in', ['x']))).toEqual(['a', 'd']);
          expect(await find(req('spec.tags', 'in', ['y', 'z']))).toEqual(['a', 'b', 'd']);
          // a has x and y: having one value outside the set doesn't make it match notin
          expect(await find(req('spec.tags', 'notin', ['y']))).toEqual(['c', 'd', 'e']);
          expect(await find(req('spec.tags', 'notin', ['x']))).toEqual(['b', 'c', 'e']);
          // an empty array is no value
          expect(await find(req('spec.tags', 'exists'))).toEqual(['a', 'b', 'd']);
          expect(await find(req('spec.tags', 'notexists'))).toEqual(['c', 'e']);
        });

        it('label requirements on metadata.labels', async () => {
          expect(await find(req('metadata.labels', 'in', ['app=web']))).toEqual(['a', 'c']); // app=web
          expect(await find(req('metadata.labels', 'notin', ['app=web']))).toEqual(['b', 'd', 'e']); // app!=web
          expect(await find(req('metadata.labels', 'in', ['app']))).toEqual(['a', 'b', 'c']); // app
          expect(await find(req('metadata.labels', 'notin', ['app']))).toEqual(['d', 'e']); // !app
          expect(await find(req('metadata.labels', 'in', ['tier=front', 'app=db']))).toEqual(['a', 'b']);
          expect(await find(req('metadata.labels', 'exists'))).toEqual(['a', 'b', 'c', 'e']);
          expect(await find(req('metadata.labels', 'notexists'))).toEqual(['d']);
        });

        it('metadata.name requirements', async () => {
          expect(await find(req('metadata.name', 'in', ['a', 'c', 'zz']))).toEqual(['a', 'c']);
          expect(await find(req('metadata.name', 'notin', ['a', 'e']))).toEqual(['b', 'c', 'd']);
          expect(await find(req('metadata.name', 'exists'))).toEqual(['a', 'b', 'c', 'd', 'e']);
          expect(await find(req('metadata.name', 'notexists'))).toEqual([]);
        });

        it('empty value sets: in matches nothing, notin matches everything', async () => {
          expect(await find(req('spec.color', 'in', []))).toEqual([]);
          expect(await find(req('spec.color', 'notin', []))).toEqual(['a', 'b', 'c', 'd', 'e']);
        });

        it('requirements are ANDed', async () => {
          expect(await find(req('metadata.labels', 'in', ['app']), req('metadata.labels', 'notin', ['app=web']))).toEqual([
            'b',
          ]);
          expect(
            await find(
              req('metadata.labels', 'in', ['app=web']),
              req('spec.tags', 'in', ['x']),
              req('spec.color', 'in', ['red']),
            ),
          ).toEqual(['a']);
          expect(await find(req('spec.color', 'in', ['red']), req('spec.slug', 'notin', ['slug-a']))).toEqual(['d']);
          expect(await find(req('spec.color', 'exists'), req('spec.tags', 'notexists'))).toEqual(['e']);
        });

        it('sorts ascending with missing values first', async () => {
          expect(await sorted({ index: 'spec.color', direction: 'asc' })).toEqual(['c', 'b', 'e', 'a', 'd']);
          expect(await sorted({ index: 'metadata.creationTimestamp', direction: 'asc' })).toEqual(['b', 'c', 'a', 'e', 'd']);
        });

        it('sorts descending with missing values last', async () => {
          expect(await sorted({ index: 'spec.color', direction: 'desc' })).toEqual(['a', 'd', 'e', 'b', 'c']);
          expect(await sorted({ index: 'metadata.creationTimestamp', direction: 'desc' })).toEqual(['d', 'e', 'a', 'c', 'b']);
          expect(await sorted({ index: 'metadata.name', direction: 'desc' })).toEqual(['e', 'd', 'c', 'b', 'a']);
        });

        it('multi-valued indexes sort by their smallest value in both directions', async () => {
          // smallest tags: a=x b=y c=- d=x (not z) e=-
          expect(await sorted({ index: 'spec.tags', direction: 'asc' })).toEqual(['c', 'e', 'a', 'd', 'b']);
          expect(await sorted({ index: 'spec.tags', direction: 'desc' })).toEqual(['b', 'a', 'd', 'c', 'e']);
          // smallest label strings: a=app b=app c=app d=- e=tier
          expect(await sorted({ index: 'metadata.labels', direction: 'asc' })).toEqual(['d', 'a', 'b', 'c', 'e']);
        });

        it('several sort terms, the name breaking ties in either direction', async () => {
          expect(
            await sorted({ index: 'spec.color', direction: 'asc' }, { index: 'metadata.name', direction: 'desc' }),
          ).toEqual(['c', 'b', 'e', 'd', 'a']);
          expect(
            await sorted(
              { index: 'spec.tags', direction: 'asc' },
              { index: 'spec.color', direction: 'desc' },
              { index: 'metadata.name', direction: 'asc' },
            ),
          ).toEqual(['e', 'c', 'a', 'd', 'b']);
        });

        it('offset, limit and total', async () => {
          const ts: SortTerm = { index: 'metadata.creationTimestamp', direction: 'asc' }; // b c a e d
          const page = (offset: number, limit?: number, where: IndexRequirement[] = []) =>
            ms.list(query(where, [ts], offset, limit));
          let r = await page(1, 2);
          expect([names(r), r.total]).toEqual([['c', 'a'], 5]);
          r = await page(4, 10);
          expect([names(r), r.total]).toEqual([['d'], 5]);
          r = await page(5, 2);
          expect([names(r), r.total]).toEqual([[], 5]);
          r = await page(10, 2);
          expect([names(r), r.total]).toEqual([[], 5]);
          r = await page(0, 0);
          expect([names(r), r.total]).toEqual([[], 5]);
          r = await page(2);
          expect([names(r), r.total]).toEqual([['a', 'e', 'd'], 5]);
          r = await page(0, 5);
          expect([names(r), r.total]).toEqual([['b', 'c', 'a', 'e', 'd'], 5]);
          r = await page(1, 2, [req('spec.color', 'exists')]); // b a e d
          expect([names(r), r.total]).toEqual([['a', 'e'], 4]);
          r = await page(0, 1, [req('spec.color', 'in', ['none'])]);
          expect([names(r), r.total]).toEqual([[], 0]);
          r = await page(1, 2, [req('spec.tags', 'in', ['x', 'y'])]); // b a d
          expect([names(r), r.total]).toEqual([['a', 'd'], 3]);
          r = await page(0, 1, [req('spec.color', 'in', ['green'])]);
          expect([names(r), r.total]).toEqual([['e'], 1]);
          r = await page(1, 1, [req('metadata.labels', 'notin', ['app=web']), req('spec.tags', 'notin', ['z'])]); // b e
          expect([names(r), r.total]).toEqual([['e'], 2]);
        });
      });

      describe(`list: generated data against a reference implementation${variant}`, () => {
        // Deterministic pseudo-random data, so a failure reproduces.
        let seed = 42;
        const rnd = (n: number) => {
          seed = (seed * 1103515245 + 12345) % 2147483648;
          return seed % n;
        };
        const pick = <T>(xs: T[]) => xs[rnd(xs.length)]!;
        const COLORS = ['red', 'green', 'blue', 'cyan'];
        const TAGS = ['t0', 't1', 't2', 't3', 't4', 't5'];
        const model = makeModel(defs);
        let ms: ModelStore;
        const objects: ApiObject[] = [];

        beforeAll(async () => {
          ms = await store.model(model);
          for (let i = 0; i < 200; i++) {
            const labels: Record<string, string> = {};
            if (rnd(4)) labels.app = pick(['web', 'db', 'cache']);
            if (rnd(3) === 0) labels.tier = pick(['front', 'back']);
            const s: WidgetSpec = {};
            if (rnd(5)) s.color = pick(COLORS);
            const tags = Array.from({ length: rnd(4) }, () => pick(TAGS));
            if (tags.length || rnd(2)) s.tags = tags;
            const ts = `2024-01-01T00:${String(rnd(60)).padStart(2, '0')}:00Z`; // many ties
            objects.push(await ms.create(widget(`g-${String(rnd(100000)).padStart(5, '0')}-${i}`, s, { labels, ts })));
          }
        });

        /** What the store must answer, computed from the objects and model.indexValues. */
        function reference(q: StoreQuery): string[] {
          const vals = (o: ApiObject, index: string) => model.indexValues(o)[index] ?? [];
          const matches = (o: ApiObject, r: IndexRequirement) => {
            const v = vals(o, r.index);
            if (r.op === 'in') return v.some((x) => r.values.includes(x));
            if (r.op === 'notin') return !v.some((x) => r.values.includes(x));
            return r.op === 'exists' ? v.length > 0 : v.length === 0;
          };
          const key = (o: ApiObject, index: string) => [...vals(o, index)].sort()[0]; // ASCII data
          const cmp = (a: ApiObject, b: ApiObject) => {
            for (const t of q.sort) {
              const [x, y] = [key(a, t.index), key(b, t.index)];
              if (x === y) continue;
              // missing first ascending, last descending
              const c = x === undefined ? -1 : y === undefined ? 1 : x < y ? -1 : 1;
              return t.direction === 'asc' ? c : -c;
            }
            return 0;
          };
          return objects
            .filter((o) => q.where.every((r) => matches(o, r)))
            .sort(cmp)
            .map((o) => o.metadata.name);
        }

        const wheres: IndexRequirement[][] = [
          [],
          [req('metadata.labels', 'in', ['app=web'])],
          [req('metadata.labels', 'in', ['app'])],
          [req('metadata.labels', 'notin', ['app=db'])],
          [req('metadata.labels', 'notin', ['tier'])],
          [req('metadata.labels', 'in', ['tier=front', 'app=cache'])],
          [req('spec.tags', 'in', ['t1'])],
          [req('spec.tags', 'in', ['t1', 't2', 't3'])],
          [req('spec.tags', 'notin', ['t0', 't5'])],
          [req('spec.tags', 'exists'), req('spec.color', 'notexists')],
          [req('spec.color', 'in', ['red', 'cyan']), req('metadata.labels', 'notin', ['tier=back'])],
          [req('metadata.labels', 'in', ['app=web']), req('spec.tags', 'in', ['t2', 't4']), req('spec.color', 'exists')],
          [req('metadata.labels', 'in', ['app']), req('spec.tags', 'notin', ['t3'])],
        ];
        const sorts: SortTerm[][] = [
          [byName],
          [{ index: 'metadata.creationTimestamp', direction: 'desc' }, byName],
          [{ index: 'spec.color', direction: 'asc' }, { index: 'metadata.name', direction: 'desc' }],
          [{ index: 'spec.tags', direction: 'desc' }, byName],
          [{ index: 'metadata.labels', direction: 'asc' }, { index: 'spec.tags', direction: 'asc' }, byName],
        ];

        it('full lists match the reference for every requirement and sort', async () => {
          for (const where of wheres) {
            for (const sort of sorts) {
              const q: StoreQuery = { where, sort, offset: 0 };
              const want = reference(q);
              const got = await ms.list(q);
              expect(names(got), JSON.stringify(q)).toEqual(want);
              expect(got.total).toBe(want.length);
            }
          }
        });

        it('every window is the matching slice, with the full total', async () => {
          const windows: [number, number][] = [
            [0, 1],
            [0, 10],
            [3, 7],
            [40, 25],
            [150, 100],
            [199, 5],
            [0, 1000],
          ];
          for (const where of wheres) {
            for (const sort of sorts.slice(0, 3)) {
              const want = reference({ where, sort, offset: 0 });
              for (const [offset, limit] of windows) {
                const q: StoreQuery = { where, sort, offset, limit };
                const got = await ms.list(q);
                expect(names(got), JSON.stringify(q)).toEqual(want.slice(offset, offset + limit));
                expect(got.total, JSON.stringify(q)).toBe(want.length);
              }
            }
          }
        });
      });
    }

    // Keyset pages (docs/API.md §12), on each way spec.color may be held, with a numeric index.
    for (const [variant, defs] of [['', [...BASE, SIZE_NUMERIC]], [' (spec.color a text index)', [...BASE_TEXT, SIZE_NUMERIC]]] as [string, IndexDef[]][]) {
      describe(`keyset pages${variant}`, () => {
        const model = makeModel(defs);
        let ms: ModelStore;
        const COLORS = ['red', 'green', 'blue'];
        const TAGS = ['t0', 't1', 't2', 't3'];
        const SORTABLE = ['metadata.creationTimestamp', 'spec.color', 'spec.tags', 'metadata.labels', 'spec.size', 'spec.slug'];
        /** An object of the generated data: few distinct values, so ties and missing values abound. */
        const objectArb = (name: string) =>
          fc
            .record({
              color: fc.option(fc.constantFrom(...COLORS), { nil: undefined }),
              tags: fc.option(fc.subarray(TAGS), { nil: undefined }),
              size: fc.option(fc.constantFrom(-3, 0, 2.5, 7, 10, 100), { nil: undefined }),
              app: fc.option(fc.constantFrom('web', 'db'), { nil: undefined }),
              minute: fc.integer({ min: 0, max: 5 }),
              slug: fc.boolean(),
            })
            .map((g) => {
              const s: WidgetSpec = {};
              if (g.color) s.color = g.color;
              if (g.tags) s.tags = g.tags;
              if (g.size !== undefined) s.size = g.size;
              if (g.slug) s.slug = `slug-${name}`;
              return widget(name, s, { labels: g.app ? { app: g.app } : {}, ts: `2024-01-01T00:0${g.minute}:00Z` });
            });
        const whereArb = fc.constantFrom<IndexRequirement[]>(
          [],
          [req('metadata.labels', 'in', ['app=web'])],
          [req('metadata.labels', 'notin', ['app=web'])],
          [req('spec.color', 'in', ['red', 'blue'])],
          [req('spec.color', 'notexists')],
          [req('spec.tags', 'in', ['t1']), req('metadata.labels', 'in', ['app'])],
          [req('spec.size', 'gte', ['2.5'])],
          [req('spec.size', 'lt', ['10']), req('spec.color', 'exists')],
          [req('spec.color', 'gt', ['green'])],
          [req('spec.tags', 'lte', ['t1'])],
          [req('metadata.creationTimestamp', 'gte', ['2024-01-01T00:03:00Z'])],
        );
        const dirArb = fc.constantFrom<'asc' | 'desc'>('asc', 'desc');
        /** A sort as the planner makes it: indexed fields, each once, then metadata.name (maybe earlier). */
        const sortArb = fc
          .tuple(fc.uniqueArray(fc.constantFrom(...SORTABLE), { maxLength: 2 }), fc.array(dirArb, { minLength: 3, maxLength: 3 }), fc.nat(2))
          .map(([fields, dirs, nameAt]) => {
            const terms: SortTerm[] = fields.map((index, i) => ({ index, direction: dirs[i]! }));
            terms.splice(Math.min(nameAt, terms.length), 0, { index: 'metadata.name', direction: dirs[2]! });
            return terms;
          });

        /** Follows `next` from the first page to the last; `between` runs after each page. */
        async function walk(where: IndexRequirement[], sort: SortTerm[], limit: number, between?: () => Promise<void>) {
          const pages: string[][] = [];
          let after: SortKey | undefined;
          for (;;) {
            const p = await ms.page({ where, sort, limit, ...(after && { after }) });
            expect(p.items.length).toBeLessThanOrEqual(limit);
            expect(p.keys).toHaveLength(p.items.length);
            pages.push(names({ items: p.items, total: 0 }));
            if (!p.more) return { names: pages.flat(), pages };
            expect(p.items).toHaveLength(limit);
            const last = p.keys.at(-1)!;
            if (after) expect(compareKeys(keysetTerms(sort), after, last)).toBeLessThan(0);
            after = last;
            expect(pages.length).toBeLessThan(500);
            await between?.();
          }
        }

        beforeAll(async () => {
          ms = await store.model(model);
          const data = fc.sample(
            fc.tuple(...Array.from({ length: 60 }, (_, i) => objectArb(`k-${String(i).padStart(2, '0')}`))),
            { numRuns: 1, seed: 7 },
          )[0]!;
          for (const o of data) await ms.create(o);
        });

        it('every keyset walk equals the page-mode list of the same query (property)', async () => {
          await fc.assert(
            fc.asyncProperty(whereArb, sortArb, fc.integer({ min: 2, max: 9 }), async (where, sort, limit) => {
              const q = query(where, sort);
              const want = names(await ms.list(q));
              expect((await walk(where, q.sort, limit)).names, JSON.stringify(q)).toEqual(want);
            }),
            { numRuns: 25, seed: 11 },
          );
        }, 120_000);

        it('a page after the last key is empty; a key from another position continues from there', async () => {
          const sort: SortTerm[] = [{ index: 'spec.size', direction: 'desc' }, { index: 'metadata.name', direction: 'asc' }];
          const all = await ms.page({ where: [], sort, limit: 1000 });
          expect(all.more).toBe(false);
          const end = await ms.page({ where: [], sort, limit: 5, after: all.keys.at(-1)! });
          expect(end).toEqual({ items: [], keys: [], more: false });
          const mid = await ms.page({ where: [], sort, limit: 3, after: all.keys[10]! });
          expect(names({ items: mid.items, total: 0 })).toEqual(names({ items: all.items.slice(11, 14), total: 0 }));
          // inclusive: the object at the key too
          const at = await ms.page({ where: [], sort, limit: 3, after: all.keys[10]!, inclusive: true });
          expect(names({ items: at.items, total: 0 })).toEqual(names({ items: all.items.slice(10, 13), total: 0 }));
          const reversed: SortTerm[] = sort.map((t) => ({ ...t, direction: t.direction === 'asc' ? 'desc' : 'asc' }));
          const before = await ms.page({ where: [], sort: reversed, limit: 2, after: all.keys[10]!, inclusive: true });
          expect(names({ items: before.items, total: 0 })).toEqual(names({ items: all.items.slice(9, 11).reverse(), total: 0 }));
          // numbers as numbers: the keys of a numeric index are numbers, missing values last descending
          const sizes = all.keys.map((k) => k[0]);
          expect(sizes.filter((v) => v !== null).every((v) => typeof v === 'number')).toBe(true);
          expect(sizes.indexOf(null)).toBe(sizes.filter((v) => v !== null).length);
        });

        it('a walk under concurrent writes returns every object that stayed put, once and in order (property)', async () => {
          let n = 0;
          await fc.assert(
            fc.asyncProperty(
              whereArb,
              sortArb,
              fc.integer({ min: 1, max: 6 }),
              fc.array(fc.tuple(fc.constantFrom('create', 'update', 'touch', 'remove'), fc.nat(), objectArb('x')), { minLength: 1, maxLength: 12 }),
              async (where, sort, limit, writes) => {
                const q = query(where, sort);
                const before = names(await ms.list(q));
                const moved = new Set<string>();
                let w = 0;
                const between = async () => {
                  // one or two writes between pages
                  for (const _ of [0, 1]) {
                    const next = writes[w++];
                    if (!next) return;
                    const [kind, at, generated] = next;
                    // unique slugs: each object's own
                    const withSlug = (o: ApiObject, name: string): ApiObject =>
                      (o.spec as WidgetSpec).slug ? { ...o, spec: { ...(o.spec as WidgetSpec), slug: `slug-${name}` } } : o;
                    const shape = withSlug(generated, kind === 'create' ? `w-${n}` : '');
                    const current = await ms.list(query());
                    const target = current.items[at % Math.max(1, current.items.length)];
                    if (kind === 'create' || !target) {
                      const name = `w-${n++}`;
                      await ms.create({ ...shape, metadata: { ...shape.metadata, name } });
                      moved.add(name);
                    } else if (kind === 'remove') {
                      await ms.remove(target.metadata.name, target.metadata.version!);
                      moved.add(target.metadata.name);
                    } else {
                      // update: new sort values; touch: same values, a new version
                      const spec = kind === 'update' ? withSlug(shape, target.metadata.name).spec : target.spec;
                      const labels = kind === 'update' ? shape.metadata.labels : target.metadata.labels;
                      const next = { ...target, spec, metadata: { ...target.metadata, labels, version: target.metadata.version! + 1 } };
                      await ms.update(next, target.metadata.version!);
                      if (kind === 'update') moved.add(target.metadata.name);
                    }
                  }
                };
                const got = (await walk(where, q.sort, limit, between)).names;
                expect(new Set(got).size, 'no object twice').toBe(got.length);
                const stayed = before.filter((x) => !moved.has(x));
                expect(got.filter((x) => stayed.includes(x)), 'every object that stayed put, in order').toEqual(stayed);
              },
            ),
            { numRuns: 12, seed: 5 },
          );
        }, 120_000);
      });
    }

    describe('model(): idempotence and index (re)builds', () => {
      it('opening the same model again is cheap and shares data and change feed', async () => {
        const m = makeModel();
        const ms1 = await store.model(m);
        await ms1.create(widget('one', { color: 'red' }));
        const progress: IndexBuildProgress[] = [];
        const ms2 = await store.model(m, (p) => progress.push(p));
        expect(progress).toEqual([]); // nothing to build
        expect(await ms2.get('one')).not.toBeNull();
        const seen: ChangeEvent[] = [];
        const unsub = await ms2.watch(undefined, (e) => seen.push(e));
        await ms1.create(widget('two', { color: 'red' }));
        await waitFor(() => seen.length === 1, 'event through the second handle');
        unsub();
        expect(seen[0]!.object.metadata.name).toBe('two');
        expect(names(await ms2.list(query([req('spec.color', 'in', ['red'])])))).toEqual(['one', 'two']);
        // a different model object with identical indexes behaves the same
        const ms3 = await store.model(makeModel(BASE, m.key), (p) => progress.push(p));
        expect(progress).toEqual([]);
        expect((await ms3.list(query())).total).toBe(2);
      });

      it('a new index is built over existing objects', async () => {
        const key = newKey();
        const ms1 = await store.model(makeModel(BASE, key));
        await ms1.create(widget('n0', { size: 1, color: 'red' }));
        await ms1.create(widget('n1', { size: 2, color: 'blue' }));
        await ms1.create(widget('n2', { size: 3, color: 'red' }));
        await ms1.create(widget('n3', { color: 'red' }));

        const progress: IndexBuildProgress[] = [];
        const ms2 = await store.model(makeModel([...BASE, SIZE], key), (p) => progress.push(p));
        const sizeProgress = progress.filter((p) => p.index === 'spec.size');
        expect(sizeProgress.length).toBeGreaterThan(0);
        expect(sizeProgress.at(-1)!.processed).toBe(4);

        expect(names(await ms2.list(query([req('spec.size', 'in', ['2'])])))).toEqual(['n1']);
        expect(names(await ms2.list(query([req('spec.size', 'notexists')])))).toEqual(['n3']);
        expect(names(await ms2.list(query([], [{ index: 'spec.size', direction: 'desc' }])))).toEqual([
          'n2',
          'n1',
          'n0',
          'n3',
        ]);
        // older indexes are intact
        expect(names(await ms2.list(query([req('spec.color', 'in', ['red'])])))).toEqual(['n0', 'n2', 'n3']);
        // and the new index is maintained by later writes
        await ms2.create(widget('n4', { size: 2 }));
        expect(names(await ms2.list(query([req('spec.size', 'in', ['2'])])))).toEqual(['n1', 'n4']);
      });

      it('a numeric index sorts numerically and compares numbers; a type change reindexes stored objects (docs/API.md §7)', async () => {
        const key = newKey();
        // As text first (an index over a field without a numeric schema type).
        const ms1 = await store.model(makeModel([...BASE, SIZE], key));
        const sizes = [1968, -50, 1984, 999, 7, 1985, 2.5];
        for (const [i, size] of sizes.entries()) await ms1.create(widget(`y${i}`, { size }));
        await ms1.create(widget('none', {}));
        const bySize = async (ms: ModelStore, direction: 'asc' | 'desc', where: IndexRequirement[] = []) =>
          (await ms.list(query(where, [{ index: 'spec.size', direction }]))).items.map((o) => (o.spec as WidgetSpec).size ?? null);
        expect(await bySize(ms1, 'asc')).toEqual([null, -50, 1968, 1984, 1985, 2.5, 7, 999]);
        expect(names(await ms1.list(query([req('spec.size', 'in', ['07'])])))).toEqual([]);

        // The same path declared numeric: a new fingerprint, so the values are rebuilt.
        const progress: IndexBuildProgress[] = [];
        const ms2 = await store.model(makeModel([...BASE, SIZE_NUMERIC], key), (p) => progress.push(p));
        expect(progress.filter((p) => p.index === 'spec.size').at(-1)?.processed).toBe(sizes.length + 1);
        expect(await bySize(ms2, 'asc')).toEqual([null, -50, 2.5, 7, 999, 1968, 1984, 1985]);
        expect(await bySize(ms2, 'desc')).toEqual([1985, 1984, 1968, 999, 7, 2.5, -50, null]);
        expect(names(await ms2.list(query([req('spec.size', 'in', ['7'])])))).toEqual(['y4']);
        expect(names(await ms2.list(query([req('spec.size', 'in', ['07', '-5e1'])])))).toEqual(['y1', 'y4']);
        expect(names(await ms2.list(query([req('spec.size', 'in', ['7.0'])])))).toEqual(['y4']);
        expect((await ms2.list(query([req('spec.size', 'notin', ['7', '2.50'])]))).total).toBe(sizes.length + 1 - 2);
        expect(names(await ms2.list(query([req('spec.size', 'in', ['seven'])])))).toEqual([]);
        // Later writes keep it numeric; a window of the numeric order.
        await ms2.create(widget('y-new', { size: 100 }));
        expect((await ms2.list(query([], [{ index: 'spec.size', direction: 'asc' }], 3, 2))).items.map((o) => (o.spec as WidgetSpec).size)).toEqual([7, 100]);
        // And back to text: reindexed again.
        const ms3 = await store.model(makeModel([...BASE, SIZE], key));
        expect(await bySize(ms3, 'asc')).toEqual([null, -50, 100, 1968, 1984, 1985, 2.5, 7, 999]);
      });

      it('a changed fingerprint rebuilds the values of that index', async () => {
        const key = newKey();
        const ms1 = await store.model(makeModel(BASE, key));
        await ms1.create(widget('f0', { color: 'red' }));
        await ms1.create(widget('f1', { color: 'blue' }));
        const defs = BASE.map((x) => (x.d.name === 'spec.color' ? COLOR_UPPER : x));
        const progress: IndexBuildProgress[] = [];
        const ms2 = await store.model(makeModel(defs, key), (p) => progress.push(p));
        expect(progress.filter((p) => p.index === 'spec.color').at(-1)?.processed).toBe(2);
        expect(progress.some((p) => p.index === 'spec.tags')).toBe(false); // unchanged, not rebuilt
        expect(names(await ms2.list(query([req('spec.color', 'in', ['RED'])])))).toEqual(['f0']);
        expect(names(await ms2.list(query([req('spec.color', 'in', ['red'])])))).toEqual([]);
        expect(names(await ms2.list(query([], [{ index: 'spec.color', direction: 'asc' }])))).toEqual(['f1', 'f0']);
      });

      it('an index that becomes a text index, and back, answers the same over stored objects', async () => {
        const key = newKey();
        const ms1 = await store.model(makeModel(BASE, key));
        await ms1.create(widget('t0', { color: 'red' }));
        await ms1.create(widget('t1', { color: 'blue' }));
        await ms1.create(widget('t2', {}));
        await ms1.create(widget('t3', { color: '' }));
        const answers = async (ms: ModelStore) => [
          names(await ms.list(query([req('spec.color', 'in', ['red', ''])]))),
          names(await ms.list(query([req('spec.color', 'notin', ['red'])]))),
          names(await ms.list(query([req('spec.color', 'exists')]))),
          names(await ms.list(query([req('spec.color', 'notexists')]))),
          names(await ms.list(query([], [{ index: 'spec.color', direction: 'asc' }, byName]))),
          names(await ms.list(query([], [{ index: 'spec.color', direction: 'desc' }, byName]))),
        ];
        const expected = [['t0', 't3'], ['t1', 't2', 't3'], ['t0', 't1', 't3'], ['t2'], ['t2', 't3', 't1', 't0'], ['t0', 't1', 't3', 't2']];
        expect(await answers(ms1)).toEqual(expected);
        const ms2 = await store.model(makeModel(BASE_TEXT, key));
        expect(await answers(ms2)).toEqual(expected);
        await ms2.create(widget('t4', { color: 'red' }));
        await ms2.update(bump((await ms2.get('t1'))!, { color: 'green' }), 1);
        expect(names(await ms2.list(query([req('spec.color', 'in', ['red'])])))).toEqual(['t0', 't4']);
        const ms3 = await store.model(makeModel(BASE, key));
        expect(names(await ms3.list(query([req('spec.color', 'in', ['red', 'green'])])))).toEqual(['t0', 't1', 't4']);
        expect(names(await ms3.list(query([], [{ index: 'spec.color', direction: 'desc' }, byName])))).toEqual(['t0', 't4', 't1', 't3', 't2']);
      });

      it('a removed unique index is no longer enforced', async () => {
        const key = newKey();
        const ms1 = await store.model(makeModel(BASE, key));
        await ms1.create(widget('r0', { slug: 'same', color: 'red' }));
        await expectStoreError(ms1.create(widget('r1', { slug: 'same' })), 'UniqueViolation', 'spec.slug');
        const ms2 = await store.model(makeModel(BASE.filter((x) => x.d.name !== 'spec.slug'), key));
        await ms2.create(widget('r1', { slug: 'same' }));
        expect(names(await ms2.list(query([req('spec.color', 'in', ['red'])])))).toEqual(['r0']);
        expect((await ms2.list(query())).total).toBe(2);
      });

      it('removing an index while the old handle writes loses no write', async () => {
        // The values of the removed index are taken off every object that holds them while a
        // writer keeps updating those objects: each object must end as its last write left it.
        const key = newKey();
        const old = await store.model(makeModel([...BASE, SIZE], key));
        const n = 300;
        const live = new Map<string, ApiObject>();
        for (let i = 0; i < n; i++) {
          const o = await old.create(widget(`rm-${String(i).padStart(4, '0')}`, { size: i, color: 'red' }));
          live.set(o.metadata.name, o);
        }
        let removing = true;
        let during = 0;
        const writer = (async () => {
          for (let i = 0; removing; i++) {
            const name = `rm-${String((i * 37) % n).padStart(4, '0')}`;
            const cur = live.get(name)!;
            live.set(name, await old.update(bump(cur, { size: (cur.spec as WidgetSpec).size! + 1000, color: `c${i}` }), cur.metadata.version!));
            if (removing) during++;
            await sleep(0);
          }
        })();
        const ms = await store.model(makeModel(BASE, key));
        removing = false;
        await writer;
        expect(during, 'writes made while the index was being removed').toBeGreaterThan(0);
        const changed: string[] = [];
        for (const [name, o] of live) {
          const now = await ms.get(name);
          if (now?.metadata.version !== o.metadata.version || JSON.stringify(now?.spec) !== JSON.stringify(o.spec)) changed.push(`${name}: v${now?.metadata.version} ${JSON.stringify(now?.spec)}, written v${o.metadata.version} ${JSON.stringify(o.spec)}`);
        }
        expect(changed.slice(0, 5), `${changed.length} objects not as last written`).toEqual([]);
        expect(names(await ms.list(query([req('spec.color', 'in', ['red'])]))).length).toBe([...live.values()].filter((o) => (o.spec as WidgetSpec).color === 'red').length);
      });

      it('writes through the old handle during a rebuild end up in the new indexes', async () => {
        // The rebuild adds a multi-valued index, a unique index and redefines spec.color, while a
        // writer keeps creating, updating and deleting through the handle opened before.
        const key = newKey();
        const old = await store.model(makeModel(BASE, key));
        const n = 250; // several rebuild batches on the embedded store here (100 each)
        const live = new Map<string, ApiObject>();
        const serialOf = (i: number, round: number) => `s-${i}-${round}`;
        for (let i = 0; i < n; i++) {
          const o = await old.create(widget(`rb-${String(i).padStart(4, '0')}`, { size: i % 5, color: i % 2 ? 'red' : 'blue', tags: [serialOf(i, 0)] }));
          live.set(o.metadata.name, o);
        }
        const SERIAL = ix('spec.serial', (o) => (spec(o).tags ?? []).map((c) => `#${c}`), { unique: true, fingerprint: 'func:serial', path: undefined });
        const defs = [...BASE.map((x) => (x.d.name === 'spec.color' ? COLOR_UPPER : x)), SIZE, SERIAL];
        const next = makeModel(defs, key);

        let building = true;
        let during = 0;
        let round = 0;
        const writer = (async () => {
          let i = 0;
          while (building) {
            round++;
            const name = `rb-${String((i * 37) % n).padStart(4, '0')}`;
            const cur = live.get(name);
            if (i % 9 === 4 && cur) {
              await old.remove(name, cur.metadata.version!);
              live.delete(name);
            } else if (cur) {
              const up = bump(cur, { size: (cur.spec as WidgetSpec).size! + 1, color: round % 3 ? 'green' : 'red', tags: [serialOf(i, round)] });
              live.set(name, await old.update(up, cur.metadata.version!));
            } else {
              live.set(name, await old.create(widget(name, { size: 9, color: 'teal', tags: [serialOf(i, round)] })));
            }
            if (building) during++;
            i++;
            await sleep(0);
          }
        })();
        const ms = await store.model(next);
        building = false;
        await writer;
        expect(during, 'writes made while the index was being built').toBeGreaterThan(0);

        // Every index against the data, value by value.
        const all = [...live.values()];
        expect((await ms.list(query())).total).toBe(all.length);
        // Values of objects written during the build one by one; the rest (few on FerretDB,
        // where each list is a scan) checked together.
        const rewritten = new Set(all.filter((o) => o.metadata.version! > 1 || spec(o).size === 9).map((o) => o.metadata.name));
        const expectIndex = async (index: string, valuesOf: (o: ApiObject) => string[]) => {
          const byValue = new Map<string, string[]>();
          for (const o of all) for (const v of valuesOf(o)) byValue.set(v, [...(byValue.get(v) ?? []), o.metadata.name].sort());
          const each = [...byValue].filter(([, holders]) => byValue.size <= 20 || holders.some((h) => rewritten.has(h)));
          for (const [v, expected] of each) {
            expect(names(await ms.list(query([req(index, 'in', [v])]))), `${index}=${v}`).toEqual(expected);
          }
          const holders = [...new Set([...byValue.values()].flat())].sort();
          expect(names(await ms.list(query([req(index, 'in', [...byValue.keys()])]))), `${index} any value`).toEqual(holders);
          const without = all.filter((o) => valuesOf(o).length === 0).map((o) => o.metadata.name).sort();
          expect(names(await ms.list(query([req(index, 'notexists')]))), `${index} without value`).toEqual(without);
        };
        await expectIndex('spec.size', SIZE.values);
        await expectIndex('spec.color', COLOR_UPPER.values);
        await expectIndex('spec.serial', SERIAL.values);
        await expectIndex('spec.tags', (o) => [...new Set(spec(o).tags ?? [])]);
        // the new unique index holds every value written during the build
        const taken = all.find((o) => o.metadata.version! > 1)!;
        await expectStoreError(ms.create(widget('rb-dup', { tags: [spec(taken).tags![0]!] })), 'UniqueViolation', 'spec.serial');
        await expectStoreError(old.create(widget('rb-dup', { tags: [spec(taken).tags![0]!] })), 'UniqueViolation', 'spec.serial');
        // and the old handle keeps writing with the new index values
        const fresh = await old.create(widget('rb-after', { size: 42, color: 'pink', tags: ['after'] }));
        expect(names(await ms.list(query([req('spec.size', 'in', ['42'])])))).toEqual([fresh.metadata.name]);
        expect(names(await ms.list(query([req('spec.serial', 'in', ['#after'])])))).toEqual(['rb-after']);
      }, 240_000);

      it('rebuilds stream in batches over many objects', async () => {
        const key = newKey();
        const ms1 = await store.model(makeModel(BASE, key));
        const n = 1200; // above both adapters' batch sizes (embedded 1000, mongo 500)
        for (let i = 0; i < n; i++) {
          await ms1.create(widget(`obj-${String(i).padStart(5, '0')}`, { size: i % 7 }));
        }
        const progress: IndexBuildProgress[] = [];
        const ms2 = await store.model(makeModel([...BASE, SIZE], key), (p) => progress.push(p));
        const counts = progress.filter((p) => p.index === 'spec.size').map((p) => p.processed);
        expect(counts.length).toBeGreaterThan(1); // more than one batch
        expect(counts.at(-1)).toBe(n);
        for (let i = 1; i < counts.length; i++) expect(counts[i]!).toBeGreaterThan(counts[i - 1]!);
        const r = await ms2.list(query([req('spec.size', 'in', ['3'])], [], 0, 2));
        expect(r.total).toBe(Math.floor((n - 1 - 3) / 7) + 1);
        expect(names(r)).toEqual(['obj-00003', 'obj-00010']);
      }, 240_000);
    });

    describe('watch', () => {
      it('delivers ADDED, MODIFIED, DELETED in order with increasing resourceVersion', async () => {
        const ms = await store.model(makeModel());
        const rv0 = await ms.resourceVersion();
        const events: ChangeEvent[] = [];
        const unsub = await ms.watch(undefined, (e) => events.push(e));
        const v1 = await ms.create(widget('w', { color: 'red' }));
        const v2 = bump(v1, { color: 'blue' });
        await ms.update(v2, 1);
        await ms.remove('w', 2);
        await waitFor(() => events.length >= 3, '3 events');
        expect(events.map((e) => e.type)).toEqual(['ADDED', 'MODIFIED', 'DELETED']);
        expect(events[0]!.object).toEqual(v1);
        expect(events[1]!.object).toEqual(v2);
        expect(events[2]!.object).toEqual(v2); // the last state
        // every event carries the state it replaced
        expect(events[0]!.previous).toBeUndefined();
        expect(events[1]!.previous).toEqual(v1);
        expect(events[2]!.previous).toEqual(v2);
        // positions are database-assigned decimal integers, strictly increasing along the feed
        const rvs = events.map((e) => e.resourceVersion);
        for (const rv of [rv0, ...rvs]) expect(rv).toMatch(/^\d+$/);
        const n = [rv0, ...rvs].map(BigInt);
        for (let i = 1; i < n.length; i++) expect(n[i]! > n[i - 1]!, `${n[i]} after ${n[i - 1]}`).toBe(true);
        expect(await ms.resourceVersion()).toBe(rvs[2]);

        // failed writes publish nothing; unsubscribed listeners hear nothing
        await expectStoreError(ms.remove('w', 2), 'NotFound');
        unsub();
        await ms.create(widget('after'));
        await sleep(50);
        expect(events).toHaveLength(3);
      });

      it('a remove given the final state publishes it in the DELETED change', async () => {
        const ms = await store.model(makeModel());
        const events: ChangeEvent[] = [];
        const unsub = await ms.watch(undefined, (e) => events.push(e));
        const v1 = await ms.create(widget('fs', { color: 'red' }));
        const final = { ...v1, metadata: { ...v1.metadata, version: 2, deletionTimestamp: '2026-01-01T00:00:00Z' } };
        await ms.remove('fs', 1, final);
        await waitFor(() => events.length >= 2, '2 events');
        unsub();
        expect(events.map((e) => e.type)).toEqual(['ADDED', 'DELETED']);
        expect(events[1]!.object).toEqual(final);
        expect(events[1]!.previous).toEqual(final);
        expect(await ms.get('fs')).toBeNull();
      });

      it('resumes after a resourceVersion, then continues live', async () => {
        const ms = await store.model(makeModel());
        await ms.create(widget('before'));
        const rvA = await ms.resourceVersion();
        const r1 = await ms.create(widget('r1'));
        await ms.create(widget('r2'));
        await ms.update(bump(r1, { color: 'x' }), 1);

        const got: ChangeEvent[] = [];
        const unsub = await ms.watch(rvA, (e) => got.push(e));
        await waitFor(() => got.length >= 3, 'replayed events');
        expect(got.map((e) => [e.type, e.object.metadata.name])).toEqual([
          ['ADDED', 'r1'],
          ['ADDED', 'r2'],
          ['MODIFIED', 'r1'],
        ]);
        await ms.create(widget('r3'));
        await waitFor(() => got.length >= 4, 'live event');
        expect(got[3]!.object.metadata.name).toBe('r3');
        unsub();

        // from the middle: exactly the later events, same positions
        const mid: ChangeEvent[] = [];
        const unsub2 = await ms.watch(got[0]!.resourceVersion, (e) => mid.push(e));
        await waitFor(() => mid.length >= 3, 'events after the first');
        await sleep(20);
        expect(mid.map((e) => e.resourceVersion)).toEqual(got.slice(1).map((e) => e.resourceVersion));
        unsub2();

        // from now: nothing replayed
        const none: ChangeEvent[] = [];
        const unsub3 = await ms.watch(await ms.resourceVersion(), (e) => none.push(e));
        await sleep(30);
        expect(none).toEqual([]);
        await ms.create(widget('r4'));
        await waitFor(() => none.length === 1, 'live event after resume at head');
        expect(none[0]!.object.metadata.name).toBe('r4');
        unsub3();
      });

      describe('fan-out hints (WatchHints)', () => {
        const colorOf = (o: ApiObject | undefined) => (o?.spec as WidgetSpec | undefined)?.color;
        /** A gate letting through the changes a `color=red` selector sees before or after; counts its calls. */
        const redGate = (key: string) => {
          const g = {
            key,
            asked: 0,
            pass: (e: ChangeEvent) => (g.asked++, colorOf(e.object) === 'red' || colorOf(e.previous) === 'red'),
          };
          return g;
        };
        const isRed = (e: ChangeEvent) => colorOf(e.object) === 'red' || colorOf(e.previous) === 'red';
        const positions = (es: readonly ChangeEvent[]) => es.map((e) => e.resourceVersion);

        /** 12 changes in bursts (creates of red and blue widgets, then red ones turned blue). */
        async function writeBursts(ms: ModelStore, tag: string): Promise<void> {
          const made = await Promise.all(
            ['red', 'blue', 'red', 'red', 'blue', 'red'].map((color, i) => ms.create(widget(`${tag}-${i}`, { color }))),
          );
          await Promise.all([ms.create(widget(`${tag}-b1`, { color: 'blue' })), ms.create(widget(`${tag}-r1`, { color: 'red' }))]);
          await Promise.all([0, 2, 3, 5].map((i) => ms.update(bump(made[i]!, { color: 'blue' }), 1)));
        }

        it('members of one gate get each read as one shared batch; the gate is asked once per change; a refusing group is never visited', async () => {
          const ms = await store.model(makeModel());
          const red = redGate('red');
          const none: FeedGate & { asked: number } = { key: 'none', asked: 0, pass: () => (none.asked++, false) };
          const batches: (readonly ChangeEvent[])[][] = [[], [], []];
          const singles: ChangeEvent[][] = [[], [], []];
          const unsubs: (() => void)[] = [];
          const all: ChangeEvent[] = [];
          unsubs.push(await ms.watch(undefined, (e) => all.push(e)));
          const audiences: number[] = [];
          for (let i = 0; i < 3; i++) {
            unsubs.push(
              await ms.watch(undefined, (e) => singles[i]!.push(e), undefined, { gate: () => red, onBatch: (es, n) => (batches[i]!.push(es), audiences.push(n)) }),
            );
          }
          let visited = 0;
          unsubs.push(await ms.watch(undefined, () => visited++, undefined, { gate: () => none, onBatch: () => visited++ }));
          await writeBursts(ms, 'g');
          await waitFor(() => all.length >= 12, '12 changes on the plain subscriber');
          const want = positions(all.filter(isRed));
          await waitFor(() => batches[0]!.flat().length + singles[0]!.length >= want.length, 'the red changes on a member');
          await sleep(100);
          for (let i = 0; i < 3; i++) {
            // every change its gate lets through, once, in feed order (one-by-one only before it joined)
            expect([...positions(singles[i]!), ...positions(batches[i]!.flat())]).toEqual(want);
            expect(singles[i]).toEqual([]);
          }
          // the same array for every member, read by read
          expect(batches[1]!.length).toBe(batches[0]!.length);
          batches[0]!.forEach((b, k) => {
            expect(batches[1]![k]).toBe(b);
            expect(batches[2]![k]).toBe(b);
          });
          // each batch names its audience: the three members of the gate's group
          expect(audiences.length).toBe(3 * batches[0]!.length);
          expect(new Set(audiences)).toEqual(new Set([3]));
          expect(red.asked).toBe(12);
          expect(none.asked).toBe(12);
          expect(visited).toBe(0);
          for (const u of unsubs) u();
        });

        it('a subscriber that offers its gate in the middle of a read gets the rest of that read once, as its group does', async () => {
          const ms = await store.model(makeModel());
          const red = redGate('red-late');
          const member: ChangeEvent[] = [];
          const peerBatches: (readonly ChangeEvent[])[] = [];
          const all: ChangeEvent[] = [];
          const unsubs = [
            await ms.watch(undefined, (e) => all.push(e)),
            await ms.watch(undefined, () => undefined, undefined, { gate: () => red, onBatch: (es) => peerBatches.push(es) }),
          ];
          let seen = 0;
          // Loose (every change one by one) until it has seen three, then only what the gate passes.
          unsubs.push(
            await ms.watch(
              undefined,
              (e) => {
                seen++;
                member.push(e);
              },
              undefined,
              { gate: () => (seen >= 3 ? red : undefined), onBatch: (es) => member.push(...es) },
            ),
          );
          await writeBursts(ms, 'l');
          await waitFor(() => all.length >= 12, '12 changes');
          const want = [...positions(all.slice(0, 3)), ...positions(all.slice(3).filter(isRed))];
          await waitFor(() => member.length >= want.length, 'the member');
          await sleep(100);
          expect(positions(member)).toEqual(want);
          expect(positions(peerBatches.flat())).toEqual(positions(all.filter(isRed)));
          for (const u of unsubs) u();
        });

        it('a stream of writes reaches 1,000 subscribers in few reads; a lone write after a quiet spell at once', async () => {
          const ms = await store.model(makeModel());
          const red = redGate('red-many');
          const reads: number[] = [];
          const got: ChangeEvent[] = [];
          const unsubs: (() => void)[] = [];
          unsubs.push(await ms.watch(undefined, () => undefined, undefined, { gate: () => red, onBatch: (es) => (reads.push(es.length), got.push(...es)) }));
          for (let i = 1; i < 1000; i++) unsubs.push(await ms.watch(undefined, () => undefined, undefined, { gate: () => red, onBatch: () => undefined }));
          const t0 = performance.now();
          for (let i = 0; i < 30; i++) {
            await ms.create(widget(`s-${i}`, { color: 'red' }));
            await sleep(5);
          }
          const elapsed = performance.now() - t0;
          await waitFor(() => got.length >= 30, 'the 30 changes');
          expect(positions(got)).toEqual([...new Set(positions(got))]);
          // 1,000 subscribers: a read per delivery window (500 ms) at most while changes stream
          // in (plus the first and a last one); one read per write would be 30.
          expect(deliveryWindowMs(1000)).toBe(500);
          expect(reads.length, `${reads.length} reads in ${elapsed.toFixed(0)} ms`).toBeLessThanOrEqual(Math.ceil(elapsed / 500) + 2);
          expect(reads.length).toBeLessThan(30);
          // quiet for longer than the window: the next write is not held back
          await sleep(deliveryWindowMs(1000) + 150);
          const before = got.length;
          const t1 = performance.now();
          await ms.create(widget('lone', { color: 'red' }));
          await waitFor(() => got.length > before, 'the lone write');
          expect(performance.now() - t1).toBeLessThan(90);
          for (const u of unsubs) u();
        });
      });

      it('an unknown resourceVersion throws Expired', async () => {
        const ms = await store.model(makeModel());
        await ms.create(widget('x'));
        await expectStoreError(ms.watch('bogus', () => {}), 'Expired');
        await expectStoreError(ms.watch('999999999999', () => {}), 'Expired');
      });
    });

    // Last: closes the original store.
    it('keeps data across close and reopen', async (ctx) => {
      if (!h.reopen) return ctx.skip();
      const m = makeModel();
      const ms = await store.model(m);
      const a1 = await ms.create(widget('pa', { slug: 'pa', color: 'red', tags: ['k'] }, { labels: { app: 'web' } }));
      const a2 = bump(a1, { slug: 'pa', color: 'blue', tags: ['k'] });
      await ms.update(a2, 1);
      await ms.create(widget('pb', { slug: 'pb', color: 'red' }));
      await ms.create(widget('pc', { slug: 'pc' }));
      await ms.remove('pc', 1);

      await store.close();
      reopened = await h.reopen();
      const again = await reopened.model(m);
      expect(await again.get('pa')).toEqual(a2);
      expect(await again.get('pc')).toBeNull();
      expect(names(await again.list(query([req('spec.color', 'in', ['red'])])))).toEqual(['pb']);
      expect(names(await again.list(query([req('metadata.labels', 'in', ['app=web'])])))).toEqual(['pa']);
      expect(names(await again.list(query([], [{ index: 'spec.color', direction: 'asc' }])))).toEqual(['pa', 'pb']);
      await expectStoreError(again.create(widget('pz', { slug: 'pb' })), 'UniqueViolation', 'spec.slug');
      await expectStoreError(again.update(bump(a1, {}), 1), 'Conflict');
      await again.update(bump(a2, { slug: 'pa', color: 'green' }), 2);
      expect((await again.get('pa'))?.metadata.version).toBe(3);
      await again.create(widget('pc', { slug: 'pc' }));
    });
  });
}
