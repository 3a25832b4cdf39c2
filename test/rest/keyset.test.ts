/**
 * Keyset pages over REST (docs/API.md §12), both stores: `limit` and `continue` walk every query
 * exactly as the page-mode list orders it, stay exact under concurrent writes, refuse bad values
 * and foreign or altered tokens with 400, and a page's resourceVersion resumes a watch without a
 * gap or a repeat.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, STORES, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { auth, pluginsDir, type PluginsDir } from '../plugins/fixtures.js';
import { openWatch } from '../watch/helpers.js';
import { ITEMS, item, KEYSET_PLUGIN, OTHERS } from './keyset-fixture.js';

const QUERIES = [
  '',
  'sort=spec.rank,desc',
  'sort=spec.rank,asc&labelSelector=app=web',
  'sort=spec.team,asc&sort=spec.rank,desc',
  'sort=spec.tags,desc&sort=metadata.name,desc',
  'fieldSelector=spec.team!=a&sort=spec.team,desc',
  'labelSelector=app&fieldSelector=spec.tags=t1&sort=metadata.creationTimestamp,asc',
  'sort=metadata.name,desc',
];

describe.each(STORES)('keyset pages over REST (%s)', (kind) => {
  let dir: PluginsDir;
  let gw: TestGateway;
  const get = async (path: string) => call(gw, 'GET', path, undefined, auth);
  const names = (body: any): string[] => body.items.map((o: any) => o.metadata.name);

  /** Follows `continue` to "" (at most 200 pages); `between` runs after each page. */
  async function walk(query: string, limit: number, between?: () => Promise<void>) {
    const seen: string[] = [];
    let token = '';
    for (let n = 0; n < 200; n++) {
      const r = await get(`${ITEMS}?${query}${query ? '&' : ''}limit=${limit}${token ? `&continue=${encodeURIComponent(token)}` : ''}`);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.items.length).toBeLessThanOrEqual(limit);
      seen.push(...names(r.body));
      token = r.body.continue;
      if (token === '') return seen;
      expect(r.body.items).toHaveLength(limit);
      await between?.();
    }
    throw new Error('the walk did not end');
  }

  beforeAll(async () => {
    dir = await pluginsDir();
    await dir.write('keyset', { 'plugin.yaml': KEYSET_PLUGIN });
    gw = await startTestGateway(kind, { pluginsDir: dir.dir });
    for (let i = 0; i < 45; i++) {
      const r = await call(gw, 'POST', ITEMS, item(i), auth);
      expect(r.status, JSON.stringify(r.body)).toBe(201);
    }
    expect((await call(gw, 'POST', OTHERS, item(1), auth)).status).toBe(201);
  }, 120_000);
  afterAll(async () => {
    await gw?.dispose();
    await dir?.remove();
  });

  it('answers {items, resourceVersion, continue}: at most limit items, "" on the last page, no total', async () => {
    const r = await get(`${ITEMS}?limit=40`);
    expect(r.status).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(['continue', 'items', 'resourceVersion']);
    expect(r.body.items).toHaveLength(40);
    expect(r.body.continue).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(typeof r.body.resourceVersion).toBe('string');
    const last = await get(`${ITEMS}?limit=40&continue=${r.body.continue}`);
    expect(last.body.items).toHaveLength(5);
    expect(last.body.continue).toBe('');
    // a page that ends exactly at the last match says so
    expect((await get(`${ITEMS}?limit=45`)).body.continue).toBe('');
    expect((await get(`${ITEMS}?limit=1000`)).body.items).toHaveLength(45);
    // objects are presented as by every other read: a user's password hash never leaves
    const users = await get('/api/v1alpha1/users?limit=5');
    expect(users.status).toBe(200);
    expect(users.body.items.length).toBeGreaterThan(0);
    expect(JSON.stringify(users.body)).not.toMatch(/scrypt|password/i);
  });

  it('every walk equals the page-mode list of the same query, for every page size', async () => {
    for (const q of QUERIES) {
      const full = await get(`${ITEMS}?${q}${q ? '&' : ''}page=1&size=100`);
      expect(full.status, q).toBe(200);
      const want = names(full.body);
      expect(want.length, q).toBeGreaterThan(3);
      for (const limit of q === QUERIES[1] ? [1, 4, 100] : [4, 7]) expect(await walk(q, limit), `${q} limit=${limit}`).toEqual(want);
    }
  });

  it('a walk under concurrent writes returns every object that stayed put, once and in order', async () => {
    const q = 'sort=spec.rank,desc&labelSelector=app';
    const before = names((await get(`${ITEMS}?${q}&page=1&size=100`)).body);
    const moved = new Set<string>();
    let n = 0;
    const between = async () => {
      n++;
      const created = `n-${kind}-${n}`;
      expect((await call(gw, 'POST', ITEMS, { ...item(n), metadata: { name: created, labels: { app: 'web' } } }, auth)).status).toBe(201);
      moved.add(created);
      const victim = before[(n * 7) % before.length]!;
      if (n % 2) {
        // a sort field changes: the object may be seen at its old place, its new one, or not at all
        const r = await call(gw, 'PATCH', `${ITEMS}/${victim}`, { spec: { rank: 50 + n } }, { ...auth, 'content-type': 'application/merge-patch+json' });
        if (r.status === 200) moved.add(victim);
      } else if (!moved.has(victim)) {
        expect((await call(gw, 'DELETE', `${ITEMS}/${victim}`, undefined, auth)).status).toBe(200);
        moved.add(victim);
      }
      // a change of anything but the sort fields keeps an object in place
      const kept = before.find((x) => !moved.has(x))!;
      await call(gw, 'PATCH', `${ITEMS}/${kept}`, { spec: { note: `seen ${n}` } }, { ...auth, 'content-type': 'application/merge-patch+json' });
    };
    const got = await walk(q, 3, between);
    expect(new Set(got).size, 'no object twice').toBe(got.length);
    const stayed = before.filter((x) => !moved.has(x));
    expect(stayed.length).toBeGreaterThan(10);
    expect(got.filter((x) => stayed.includes(x))).toEqual(stayed);
  });

  describe('bad values get 400 and no items', () => {
    const expect400 = async (path: string, detail?: RegExp) => {
      const r = await get(path);
      expect(r.status, `${path}: ${JSON.stringify(r.body)}`).toBe(400);
      expect(r.headers.get('content-type')).toMatch(/application\/problem\+json/);
      expect(r.body.items).toBeUndefined();
      if (detail) expect(r.body.detail).toMatch(detail);
      return r;
    };

    it('limit out of range or not a number, or with page/size', async () => {
      for (const v of ['0', '1001', 'abc', '-1', '', '1.5', '1e2', '10000000000000000000']) await expect400(`${ITEMS}?limit=${v}`, /limit/);
      await expect400(`${ITEMS}?limit=10&page=2`, /page or size/);
      await expect400(`${ITEMS}?limit=10&size=5`, /page or size/);
      await expect400(`${ITEMS}?limit=10&page=1&size=5`, /page or size/);
    });

    it('continue that is garbage, altered, or from another query or model', async () => {
      const q = 'sort=spec.rank,desc&labelSelector=app=web';
      const token: string = (await get(`${ITEMS}?${q}&limit=3`)).body.continue;
      expect(token).not.toBe('');
      expect((await get(`${ITEMS}?${q}&limit=3&continue=${token}`)).status).toBe(200);
      // the token does not depend on limit: a client may change the page size
      expect((await get(`${ITEMS}?${q}&limit=5&continue=${token}`)).status).toBe(200);
      // nor on how the same selectors are spelled (order of terms, = or ==)
      const two = 'sort=spec.rank,desc&labelSelector=app=web&fieldSelector=spec.team in (a,b)';
      const t2: string = (await get(`${ITEMS}?${two}&limit=2`)).body.continue;
      expect((await get(`${ITEMS}?sort=spec.rank,desc&fieldSelector=spec.team in (b,a)&labelSelector=app==web&limit=2&continue=${t2}`)).status).toBe(200);
      for (const garbage of ['x', 'not a token', '%00', 'eyJ9', Buffer.from('[["a"],"b"]').toString('base64url'), 'A'.repeat(9000)]) {
        await expect400(`${ITEMS}?${q}&limit=3&continue=${encodeURIComponent(garbage)}`, /continue/);
      }
      // altered: the key changed, digest kept
      const [key, digest] = JSON.parse(Buffer.from(token, 'base64url').toString());
      const altered = Buffer.from(JSON.stringify([[key[0] === null ? 1 : null, ...key.slice(1)], digest])).toString('base64url');
      await expect400(`${ITEMS}?${q}&limit=3&continue=${altered}`, /another query|altered/);
      // one character changed
      const flipped = token.slice(0, 5) + (token[5] === 'A' ? 'B' : 'A') + token.slice(6);
      await expect400(`${ITEMS}?${q}&limit=3&continue=${flipped}`);
      // other selectors, another sort, another model
      await expect400(`${ITEMS}?sort=spec.rank,desc&labelSelector=app=db&limit=3&continue=${token}`, /another query/);
      await expect400(`${ITEMS}?sort=spec.rank,desc&labelSelector=app=web&fieldSelector=spec.team=a&limit=3&continue=${token}`, /another query/);
      await expect400(`${ITEMS}?sort=spec.rank,asc&labelSelector=app=web&limit=3&continue=${token}`, /another query/);
      await expect400(`${ITEMS}?labelSelector=app=web&limit=3&continue=${token}`, /another query/);
      await expect400(`${OTHERS}?${q}&limit=3&continue=${token}`, /another query/);
      // continue needs limit
      await expect400(`${ITEMS}?${q}&continue=${token}`, /limit/);
    });

    it('nothing changes', async () => {
      const before = (await get(`${ITEMS}?page=1&size=100`)).body;
      await expect400(`${ITEMS}?limit=0`);
      await expect400(`${ITEMS}?limit=2&continue=garbage`);
      const after = (await get(`${ITEMS}?page=1&size=100`)).body;
      expect(after.items).toEqual(before.items);
      expect(after.resourceVersion).toBe(before.resourceVersion);
    });
  });

  it('a watch from a keyset page\'s resourceVersion misses nothing and sees nothing twice', async () => {
    const page = (await get(`${ITEMS}?limit=5&labelSelector=app=web`)).body;
    // writes land between the page and the watch
    const r1 = await call(gw, 'POST', ITEMS, { metadata: { name: `late-${kind}-1`, labels: { app: 'web' } }, spec: { rank: 1 } }, auth);
    expect(r1.status).toBe(201);
    const target = page.items[0].metadata.name;
    expect((await call(gw, 'PATCH', `${ITEMS}/${target}`, { spec: { note: 'between' } }, { ...auth, 'content-type': 'application/merge-patch+json' })).status).toBe(200);
    expect((await call(gw, 'DELETE', `${ITEMS}/late-${kind}-1`, undefined, auth)).status).toBe(200);
    const w = openWatch(gw, `?watch=true&labelSelector=app=web&resourceVersion=${encodeURIComponent(page.resourceVersion)}`, auth, ITEMS);
    await w.opened;
    // and one after the watch opened
    expect((await call(gw, 'POST', ITEMS, { metadata: { name: `late-${kind}-2`, labels: { app: 'web' } }, spec: {} }, auth)).status).toBe(201);
    await w.until((e) => e.filter((x) => x.type !== 'BOOKMARK').length >= 4, '4 changes', 15_000);
    await new Promise((r) => setTimeout(r, 300)); // nothing more arrives
    expect(w.changes().map((e) => [e.type, e.object.metadata.name])).toEqual([
      ['ADDED', `late-${kind}-1`],
      ['MODIFIED', target],
      ['DELETED', `late-${kind}-1`],
      ['ADDED', `late-${kind}-2`],
    ]);
    w.close();
  });
});
