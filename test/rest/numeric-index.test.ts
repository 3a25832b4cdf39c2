/**
 * Numeric indexes over REST (docs/API.md §7), both stores: an index over an `integer`/`number` path
 * sorts numerically and its field selector compares numbers; when a new plugin version gives
 * the path a numeric type, the stored objects are reindexed on start.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, STORES, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { auth, pluginsDir, type PluginsDir } from '../plugins/fixtures.js';

const THINGS = '/apis/years.example.com/v1/records';

const manifest = (version: string, yearType: string) => `apiVersion: plugin.svc.run/v1alpha1
kind: Plugin
metadata:
  name: years
spec:
  version: ${version}
  models:
    - group: years.example.com
      version: v1
      kind: Record
      plural: records
      schema:
        properties:
          spec:
            type: object
            properties:
              title: { type: string }
              year: ${yearType}
      indexes:
        - { name: spec.year, path: spec.year }
        - { name: spec.title, path: spec.title }
`;

const YEARS = [1968, 1984, 1985, 999, -50, 7, 2.5];

describe.each(STORES)('numeric indexes over REST (%s)', (kind) => {
  let dir: PluginsDir;
  let gw: TestGateway;
  beforeAll(async () => {
    dir = await pluginsDir();
    // First without a type: the index sorts and compares as text.
    await dir.write('years', { 'plugin.yaml': manifest('1.0.0', '{}') });
    gw = await startTestGateway(kind, { pluginsDir: dir.dir });
    for (const [i, year] of YEARS.entries()) {
      const r = await call(gw, 'POST', THINGS, { metadata: { name: `r${i}` }, spec: { title: `t${i}`, year } }, auth);
      expect(r.status, JSON.stringify(r.body)).toBe(201);
    }
  }, 120_000);
  afterAll(async () => {
    await gw?.dispose();
    await dir?.remove();
  });

  const years = async (q: string) => {
    const r = await call(gw, 'GET', `${THINGS}?${q}`, undefined, auth);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body.items.map((o: any) => o.spec.year);
  };

  it('sorts and selects numerically once the path is typed integer/number, after reindexing stored objects', async () => {
    expect(await years('sort=spec.year,asc')).toEqual([-50, 1968, 1984, 1985, 2.5, 7, 999]);
    expect(await years('fieldSelector=spec.year=07')).toEqual([]);

    // A new plugin version types the field: the index is rebuilt over the stored objects on start.
    await dir.write('years', { 'plugin.yaml': manifest('1.1.0', '{ type: number }') });
    await gw.close();
    gw = await startTestGateway(kind, { pluginsDir: dir.dir, dataDir: gw.dataDir, mongodbUrl: gw.mongodbUrl });

    expect(await years('sort=spec.year,asc')).toEqual([-50, 2.5, 7, 999, 1968, 1984, 1985]);
    expect(await years('sort=spec.year,desc')).toEqual([1985, 1984, 1968, 999, 7, 2.5, -50]);
    expect(await years('fieldSelector=spec.year=7')).toEqual([7]);
    expect(await years('fieldSelector=spec.year=07')).toEqual([7]);
    expect(await years('fieldSelector=spec.year!=7&sort=spec.year,asc')).toEqual([-50, 2.5, 999, 1968, 1984, 1985]);
    expect(await years('fieldSelector=spec.year=seven')).toEqual([]);
    expect(await years('sort=spec.year,asc&page=2&size=3')).toEqual([999, 1968, 1984]);
    // New writes land in numeric order too.
    expect((await call(gw, 'POST', THINGS, { metadata: { name: 'r-new' }, spec: { title: 'n', year: 100 } }, auth)).status).toBe(201);
    expect(await years('sort=spec.year,asc')).toEqual([-50, 2.5, 7, 100, 999, 1968, 1984, 1985]);
    // Other indexes still sort as text.
    const titles = (await call(gw, 'GET', `${THINGS}?sort=spec.title,asc`, undefined, auth)).body.items.map((o: any) => o.spec.title);
    expect(titles).toEqual(['n', 't0', 't1', 't2', 't3', 't4', 't5', 't6']);
  }, 120_000);
});
