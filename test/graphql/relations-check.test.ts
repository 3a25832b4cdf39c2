/**
 * References declared by plugins (docs/API.md §13): a bad x-svc-ref fails its plugin with a
 * reason that says what is wrong; a good one is served, and the OpenAPI documents keep the
 * keyword and describe it. Registration does not depend on the store: embedded only.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { pluginsDir, waitPhase, type PluginsDir } from '../plugins/fixtures.js';
import { checkRelations, reverseRelations } from '../../src/graphql/relations.js';
import { compileModel } from '../../src/registry/compile.js';
import type { ModelEntry } from '../../src/operations/index.js';

/** A plugin with a model `Target` and a model `Source` whose spec.ref property carries `ref` (YAML flow text). */
function refPlugin(name: string, ref: string, opts: { type?: string; indexed?: boolean } = {}): string {
  return `apiVersion: plugin.svc.run/v1alpha1
kind: Plugin
metadata:
  name: ${name}
spec:
  version: 1.0.0
  models:
    - group: ${name}.example.com
      version: v1
      kind: Target
      schema:
        properties:
          spec:
            type: object
            properties:
              title: { type: string }
    - group: ${name}.example.com
      version: v1
      kind: Source
      schema:
        properties:
          spec:
            type: object
            properties:
              title: { type: string }
              ref:
                type: ${opts.type ?? 'string'}
                x-svc-ref: ${ref}
${opts.indexed ? `      indexes:\n        - name: spec.ref\n          path: spec.ref\n` : ''}`;
}

const CASES: [string, string, Parameters<typeof refPlugin>[2], RegExp][] = [
  ['ref-unknown', '{ group: ref-unknown.example.com, version: v1, kind: Nope, field: target }', {}, /names ref-unknown\.example\.com\/v1 Nope, which is not a registered model/],
  ['ref-taken', '{ group: ref-taken.example.com, version: v1, kind: Target, field: title }', {}, /field "title" is already taken/],
  ['ref-type', '{ group: ref-type.example.com, version: v1, kind: Target, field: target }', { type: 'integer' }, /only on a string property or an array of strings/],
  ['ref-shape', '{ group: ref-shape.example.com, kind: Target, field: target }', {}, /needs "version"/],
  ['ref-name', '{ group: ref-name.example.com, version: v1, kind: Target, field: "not a name" }', {}, /is not a GraphQL field name/],
  ['ref-reverse', '{ group: ref-reverse.example.com, version: v1, kind: Target, field: target, reverse: sources }', {}, /reverse "sources" needs the property indexed/],
];

describe('x-svc-ref declarations', () => {
  let gw: TestGateway;
  let dir: PluginsDir;
  beforeAll(async () => {
    dir = await pluginsDir();
    for (const [name, ref, opts] of CASES) await dir.write(name, { 'plugin.yaml': refPlugin(name, ref, opts) });
    await dir.write('ref-ok', {
      'plugin.yaml': refPlugin('ref-ok', '{ group: ref-ok.example.com, version: v1, kind: Target, field: target, reverse: sources }', { indexed: true }),
    });
    gw = await startTestGateway('embedded', { pluginsDir: dir.dir });
  });
  afterAll(async () => {
    await gw?.dispose();
    await dir?.remove();
  });

  it.each(CASES)('%s is FAILED with a reason that says so', async (name, _ref, _opts, reason) => {
    const p = await waitPhase(gw, name, 'FAILED');
    expect(p.status.reason).toMatch(reason);
    expect(p.status.reason).toContain('x-svc-ref on spec.ref');
  });

  it('a good reference is served, and OpenAPI keeps x-svc-ref with a description', async () => {
    await waitPhase(gw, 'ref-ok', 'STARTED');
    expect((await call(gw, 'POST', '/apis/ref-ok.example.com/v1/targets', { metadata: { name: 't1' }, spec: { title: 'T' } })).status).toBe(201);
    expect((await call(gw, 'POST', '/apis/ref-ok.example.com/v1/sources', { metadata: { name: 's1' }, spec: { ref: 't1' } })).status).toBe(201);
    const r = await call(gw, 'POST', '/graphql', { query: '{ refOkExampleCom_v1_source(name: "s1") { spec { ref target { spec { title } } } } }' });
    expect(r.body).toEqual({ data: { refOkExampleCom_v1_source: { spec: { ref: 't1', target: { spec: { title: 'T' } } } } } });
    const doc = await call(gw, 'GET', '/openapi/v3/apis/ref-ok.example.com/v1');
    expect(doc.status).toBe(200);
    const ref = doc.body.components.schemas.RefOkExampleComV1Source.properties.spec.properties.ref;
    expect(ref['x-svc-ref']).toEqual({ group: 'ref-ok.example.com', version: 'v1', kind: 'Target', field: 'target', reverse: 'sources' });
    expect(ref.description).toMatch(/kind Target \(ref-ok\.example\.com\/v1\) by metadata\.name .*`target`/);
  });
});

describe('reverse relations (for the connection builder)', () => {
  const target = compileModel({ group: 'rv.example.com', version: 'v1', kind: 'Author', schema: { properties: { spec: { type: 'object', properties: { name: { type: 'string' } } } } } });
  const source = compileModel({
    group: 'rv.example.com',
    version: 'v1',
    kind: 'Book',
    schema: {
      properties: {
        spec: {
          type: 'object',
          properties: { authors: { type: 'array', items: { type: 'string' }, 'x-svc-ref': { group: 'rv.example.com', version: 'v1', kind: 'Author', field: 'authorObjects', reverse: 'books' } } },
        },
      },
    },
    indexes: [{ name: 'by-author', path: 'spec.authors' }],
  });
  it('names the target, the field and the index over the referring property', () => {
    expect(() => checkRelations([target, source], [source])).not.toThrow();
    const entries = [target, source].map((model) => ({ model }) as ModelEntry);
    const [r, ...rest] = reverseRelations(entries);
    expect(rest).toEqual([]);
    expect([r!.target.model.kind, r!.source.model.kind, r!.field, r!.index]).toEqual(['Author', 'Book', 'books', 'by-author']);
    // Without the target registered, the declaration is refused.
    expect(() => checkRelations([source], [source])).toThrow(/names rv\.example\.com\/v1 Author, which is not a registered model/);
  });
});
