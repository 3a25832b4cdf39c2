/**
 * A new plugin version that adds an index: on the next start the index is built over the
 * objects already stored, before the model is served, so the new field can be selected and
 * sorted at once (both stores).
 */
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { call, STORES, startTestGateway, type TestGateway } from '../helpers/gateway.js';

const manifest = (indexes: string) => `apiVersion: plugin.svc.run/v1alpha1
kind: Plugin
metadata:
  name: shelf
spec:
  version: 1.0.0
  models:
    - group: shelf.example.com
      version: v1
      kind: Book
      schema:
        properties:
          spec:
            type: object
            properties:
              title: { type: string }
              year: { type: integer }
              tags: { type: array, items: { type: string } }
      indexes:
${indexes}
`;

const BOOKS = '/apis/shelf.example.com/v1/books';

describe.each(STORES)('index builds over stored objects (%s)', (kind) => {
  const cleanup: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const c of cleanup.reverse()) await c();
  });

  it('serves a newly declared index over existing data after a restart', async () => {
    const pluginsDir = await mkdtemp(join(tmpdir(), 'svc-plugins-'));
    cleanup.push(() => rm(pluginsDir, { recursive: true, force: true }));
    await mkdir(join(pluginsDir, 'shelf'));
    const file = join(pluginsDir, 'shelf', 'plugin.yaml');
    await writeFile(file, manifest('        - { name: spec.title, path: spec.title }'));

    let gw: TestGateway = await startTestGateway(kind, { pluginsDir });
    cleanup.push(() => gw.dispose());
    for (let i = 0; i < 30; i++) {
      const res = await call(gw, 'POST', BOOKS, {
        metadata: { name: `b${i}` },
        spec: { title: `t${i}`, year: 1990 + (i % 3), tags: i % 2 ? ['odd', `n${i}`] : ['even'] },
      });
      expect(res.status).toBe(201);
    }
    expect((await call(gw, 'GET', `${BOOKS}?fieldSelector=spec.year=1991`)).status).toBe(400);

    await writeFile(
      file,
      manifest(
        ['        - { name: spec.title, path: spec.title }', '        - { name: spec.year, path: spec.year, order: DESC }', '        - { name: spec.tags, path: spec.tags }'].join('\n'),
      ),
    );
    gw = await gw.restart();
    const byYear = await call(gw, 'GET', `${BOOKS}?fieldSelector=spec.year=1991&sort=metadata.name,asc`);
    expect(byYear.status).toBe(200);
    expect(byYear.body.total).toBe(10);
    expect(byYear.body.items.map((b: any) => b.metadata.name).slice(0, 3)).toEqual(['b1', 'b10', 'b13']);
    const odd = await call(gw, 'GET', `${BOOKS}?fieldSelector=spec.tags=odd&fieldSelector=spec.year!=1990&size=100`);
    expect(odd.body.items.every((b: any) => b.spec.tags.includes('odd') && b.spec.year !== 1990)).toBe(true);
    expect(odd.body.total).toBe(10);
    const sorted = await call(gw, 'GET', `${BOOKS}?sort=spec.year,desc&sort=metadata.name,asc&size=2`);
    expect(sorted.body.items.map((b: any) => b.spec.year)).toEqual([1992, 1992]);
  });
});
