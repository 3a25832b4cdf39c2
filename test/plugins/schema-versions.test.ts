/**
 * Two gateway processes on one MongoDB (FerretDB here) running different versions of a plugin:
 * the older one must not undo the indexes or unique claims the newer one declared, whichever
 * starts first, also when both start at once (schema lease + version check, store/mongo/indexes.ts).
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, freshMongoUrl } from '../helpers/gateway.js';
import { spawnGateway, tempDir, type GatewayProcess } from '../hardening/processes.js';
import { eventually } from './fixtures.js';

const BOOKS = '/apis/shelf.example.com/v1/books';
const schema = `
      schema:
        properties:
          spec:
            type: object
            properties:
              title: { type: string }
              isbn: { type: string }`;

const V1 = `apiVersion: plugin.svc.run/v1alpha1
kind: Plugin
metadata:
  name: shelf
spec:
  version: 1.9.0
  models:
    - group: shelf.example.com
      version: v1
      kind: Book${schema}
      indexes:
        - { name: spec.title, path: spec.title }
`;

// 1.10.0: newer than 1.9.0 (versions compare part by part, numerically).
const V2 = `apiVersion: plugin.svc.run/v1alpha1
kind: Plugin
metadata:
  name: shelf
spec:
  version: 1.10.0
`;
const V2_CODE = `export default {
  models: [{
    group: 'shelf.example.com', version: 'v1', kind: 'Book',
    schema: { properties: { spec: { type: 'object', properties: { title: { type: 'string' }, isbn: { type: 'string' } } } } },
    indexes: [
      { name: 'spec.title', path: 'spec.title' },
      { name: 'spec.isbn', path: 'spec.isbn', unique: true },
      { name: 'spec.initial', indexFunc: (o) => (o.spec?.title ?? '').slice(0, 1).toUpperCase() || undefined },
    ],
  }],
};
`;

describe('two gateway processes with different plugin versions on one database (mongodb)', () => {
  const url = freshMongoUrl();
  let dirs: string;
  let older: GatewayProcess | undefined;
  let newer: GatewayProcess | undefined;
  const start = (which: 'older' | 'newer') => spawnGateway({ MONGODB_URL: url, SVC_PLUGINS_DIR: join(dirs, which) });
  const served = (gw: GatewayProcess) => eventually(async () => expect((await call(gw, 'GET', `${BOOKS}?size=1`)).status).toBe(200), 60_000);
  const names = async (gw: GatewayProcess, selector: string) => {
    const res = await call(gw, 'GET', `${BOOKS}?fieldSelector=${encodeURIComponent(selector)}&sort=metadata.name,asc`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.items.map((b: any) => b.metadata.name);
  };
  const physical = async () => {
    const client = new MongoClient(url);
    try {
      return (await client.db().collection('ext.shelf.example.com.v1.books').indexes()).map((i) => i.name);
    } finally {
      await client.close();
    }
  };

  beforeAll(async () => {
    dirs = await tempDir();
    await mkdir(join(dirs, 'older', 'shelf'), { recursive: true });
    await mkdir(join(dirs, 'newer', 'shelf'), { recursive: true });
    await writeFile(join(dirs, 'older', 'shelf', 'plugin.yaml'), V1);
    await writeFile(join(dirs, 'newer', 'shelf', 'plugin.yaml'), V2);
    await writeFile(join(dirs, 'newer', 'shelf', 'index.mjs'), V2_CODE);
  }, 60_000);
  afterAll(async () => {
    await older?.kill('SIGKILL');
    await newer?.kill('SIGKILL');
    await rm(dirs, { recursive: true, force: true });
  });

  it('an older process keeps the newer version\'s indexes and claims, and maintains them', async () => {
    newer = await start('newer');
    await served(newer);
    for (const [name, title, isbn] of [['b1', 'alpha', '111'], ['b2', 'beta', '222']]) {
      expect((await call(newer, 'POST', BOOKS, { metadata: { name }, spec: { title, isbn } })).status).toBe(201);
    }

    older = await start('older');
    await served(older);
    expect(await physical()).toEqual(expect.arrayContaining(['f:spec.isbn', 's:spec.isbn', 'f:spec.initial', 'p:spec.title']));
    expect(await physical()).not.toContain('f:spec.title'); // a text index: served by its field
    expect(await names(newer, 'spec.isbn=111')).toEqual(['b1']);
    expect(await names(newer, 'spec.initial=B')).toEqual(['b2']);

    // The older process enforces the newer unique index (a path index it can compute)…
    expect((await call(older, 'POST', BOOKS, { metadata: { name: 'b3' }, spec: { title: 'gamma', isbn: '111' } })).status).toBe(409);
    expect((await call(older, 'POST', BOOKS, { metadata: { name: 'b3' }, spec: { title: 'gamma', isbn: '333' } })).status).toBe(201);
    expect(await names(newer, 'spec.isbn=333')).toEqual(['b3']);
    // …keeps its values right when it changes the field, and releases the old claim…
    const patch = { 'content-type': 'application/merge-patch+json' };
    expect((await call(older, 'PATCH', `${BOOKS}/b1`, { spec: { isbn: '999' } }, patch)).status).toBe(200);
    expect(await names(newer, 'spec.isbn=999')).toEqual(['b1']);
    expect(await names(newer, 'spec.isbn=111')).toEqual([]);
    expect((await call(newer, 'POST', BOOKS, { metadata: { name: 'b4' }, spec: { title: 'delta', isbn: '111' } })).status).toBe(201);
    // …and keeps the values of an indexFunc index it has no code for.
    expect(await names(newer, 'spec.initial=A')).toEqual(['b1']);
    expect((await call(newer, 'POST', BOOKS, { metadata: { name: 'b5' }, spec: { title: 'x', isbn: '999' } })).status).toBe(409);
  }, 240_000);

  it('restarting the older process, or both at once, undoes nothing', async () => {
    await older!.kill();
    older = await start('older');
    await served(older);
    expect(await names(newer!, 'spec.isbn=999')).toEqual(['b1']);
    expect((await call(newer!, 'POST', BOOKS, { metadata: { name: 'b6' }, spec: { title: 'y', isbn: '222' } })).status).toBe(409);

    await Promise.all([older.kill(), newer!.kill()]);
    [older, newer] = await Promise.all([start('older'), start('newer')]);
    await Promise.all([served(older), served(newer)]);
    expect(await physical()).toEqual(expect.arrayContaining(['f:spec.isbn', 'f:spec.initial']));
    expect(await names(newer, 'spec.isbn=999')).toEqual(['b1']);
    expect(await names(newer, 'spec.initial=G')).toEqual(['b3']);
    expect((await call(older, 'POST', BOOKS, { metadata: { name: 'b7' }, spec: { title: 'z', isbn: '333' } })).status).toBe(409);
    expect((await call(newer, 'POST', BOOKS, { metadata: { name: 'b7' }, spec: { title: 'z', isbn: '333' } })).status).toBe(409);
  }, 240_000);
});
