/**
 * The OpenAPI documents on a real gateway (docs/API.md §8): every document of the /openapi/v3
 * index and /openapi.json is valid OpenAPI 3.1 (@seriousme/openapi-schema-validator, which
 * also resolves every $ref); one operationId per operation; list parameters; typed bodies from
 * the model's JSON Schema (its $defs and recursive `$ref: '#'` rewritten into
 * components/schemas); problem+json errors; both patch media types; Basic and Bearer; plugin
 * routes with the bodies the plugin describes; no secret field. Caching: content hash in the
 * index URL, ETag and 304, a stale hash redirects.
 */
import { Validator } from '@seriousme/openapi-schema-validator';
import { cp } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, STORES, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { manifest, plugin, pluginsDir, type PluginsDir } from '../plugins/fixtures.js';

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];
const PERSON = 'PeopleExampleComV1alpha1Person';
const PERSONS = '/apis/people.example.com/v1alpha1/persons';

function operations(doc: any): { path: string; method: string; op: any }[] {
  const out: { path: string; method: string; op: any }[] = [];
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const method of METHODS) if (item[method]) out.push({ path, method, op: item[method] });
  }
  return out;
}

describe.each(STORES)('OpenAPI documents (%s)', (kind) => {
  let dir: PluginsDir;
  let gw: TestGateway;
  beforeAll(async () => {
    dir = await pluginsDir();
    for (const p of ['people', 'crm']) await cp(join(import.meta.dirname, `../../plugins/${p}`), join(dir.dir, p), { recursive: true });
    // A plugin with an undescribed route and a path parameter.
    await dir.write('ops', {
      'plugin.yaml': [
        'apiVersion: plugin.svc.run/v1alpha1',
        'kind: Plugin',
        'metadata: { name: ops }',
        'spec:',
        '  version: 1.0.0',
        '  models:',
        '    - group: ops.example.com',
        '      version: v1',
        '      kind: Job',
        '      schema:',
        '        properties:',
        '          spec: { $ref: "#/$defs/JobSpec" }',
        '        $defs:',
        '          JobSpec:',
        '            type: object',
        '            properties:',
        '              steps: { type: array, items: { $ref: "#/$defs/Step" } }',
        '          Step: { type: object, properties: { run: { type: string } } }',
        '',
      ].join('\n'),
      'index.mjs': `export default { routes: [
        { method: 'POST', path: '/apis/api.ops.example.com/v1/jobs/{job}/runs', handler: () => Response.json({}) },
      ] };\n`,
    });
    // A plugin whose route description is not an object: refused, with the reason.
    await dir.write('baddocs', {
      'plugin.yaml': manifest({ name: 'baddocs' }),
      'index.mjs': `export default { routes: [
        { method: 'GET', path: '/apis/api.baddocs.example.com/v1/x', openapi: 'a summary', handler: () => Response.json({}) },
      ] };\n`,
    });
    gw = await startTestGateway(kind, { pluginsDir: dir.dir });
  });
  afterAll(async () => {
    await gw?.dispose();
    await dir?.remove();
  });

  async function allDocuments(): Promise<Record<string, any>> {
    const index = await call(gw, 'GET', '/openapi/v3');
    expect(index.status).toBe(200);
    const docs: Record<string, any> = {};
    for (const [key, { serverRelativeURL }] of Object.entries<any>(index.body.paths)) {
      expect(serverRelativeURL).toMatch(new RegExp(`^/openapi/v3/${key.replace(/\./g, '\\.')}\\?hash=[0-9A-F]{128}$`));
      const r = await call(gw, 'GET', serverRelativeURL);
      expect(r.status, key).toBe(200);
      docs[key] = r.body;
    }
    const all = await call(gw, 'GET', '/openapi.json');
    expect(all.status).toBe(200);
    docs['openapi.json'] = all.body;
    return docs;
  }

  it('every document is valid OpenAPI 3.1 with one unique operationId per operation', async () => {
    const docs = await allDocuments();
    const validator = new Validator(); // compiling the OAS 3.1 meta-schema once
    expect(Object.keys(docs)).toEqual(
      expect.arrayContaining([
        'api/v1alpha1',
        'apis/people.example.com/v1alpha1',
        'apis/console.api.people.example.com/v1alpha1',
        'apis/crm.example.net/v1',
        'apis/ops.example.com/v1',
        'apis/api.ops.example.com/v1',
        'apis/plugin.svc.run/v1alpha1',
        'openapi.json',
      ]),
    );
    for (const [key, doc] of Object.entries(docs)) {
      expect(doc.openapi, key).toBe('3.1.0');
      const result = await validator.validate(structuredClone(doc));
      expect(result.errors ?? [], key).toEqual([]);
      expect(result.valid, key).toBe(true);
      const ids = operations(doc).map((o) => o.op.operationId);
      expect(ids.every((id) => typeof id === 'string' && /^[A-Za-z_][A-Za-z0-9_]*$/.test(id)), key).toBe(true);
      expect(new Set(ids).size, key).toBe(ids.length);
      expect(doc.components.securitySchemes, key).toEqual({
        basicAuth: expect.objectContaining({ type: 'http', scheme: 'basic' }),
        bearerAuth: expect.objectContaining({ type: 'http', scheme: 'bearer' }),
      });
    }
    // The combined document holds every path of every group-version document.
    const combined = Object.keys(docs['openapi.json'].paths);
    for (const [key, doc] of Object.entries(docs)) if (key !== 'openapi.json') expect(combined).toEqual(expect.arrayContaining(Object.keys(doc.paths)));
  });

  it('describes a model: operations, parameters, typed bodies, errors, patch media types', async () => {
    const doc = (await call(gw, 'GET', '/openapi/v3/apis/people.example.com/v1alpha1')).body;
    const ids = Object.fromEntries(operations(doc).map((o) => [o.op.operationId, `${o.method.toUpperCase()} ${o.path}`]));
    expect(ids).toEqual({
      listPersons: `GET ${PERSONS}`,
      createPerson: `POST ${PERSONS}`,
      deleteCollectionPersons: `DELETE ${PERSONS}`,
      getPerson: `GET ${PERSONS}/{name}`,
      replacePerson: `PUT ${PERSONS}/{name}`,
      patchPerson: `PATCH ${PERSONS}/{name}`,
      deletePerson: `DELETE ${PERSONS}/{name}`,
      getPersonStatus: `GET ${PERSONS}/{name}/status`,
      replacePersonStatus: `PUT ${PERSONS}/{name}/status`,
      patchPersonStatus: `PATCH ${PERSONS}/{name}/status`,
    });
    const list = doc.paths[PERSONS].get;
    const params = list.parameters.map((p: any) => doc.components.parameters[p.$ref.split('/').pop()]);
    const byName = Object.fromEntries(params.map((p: any) => [p.name, p]));
    expect(byName.page.schema.type).toBe('integer');
    expect(byName.size.schema.type).toBe('integer');
    // keyset pages (docs/API.md §12)
    expect(byName.limit).toMatchObject({ in: 'query', schema: { type: 'integer', minimum: 1, maximum: 1000 } });
    expect(byName.continue).toMatchObject({ in: 'query', schema: { type: 'string' } });
    expect(Object.keys(doc.components.schemas[`${PERSON}List`].properties)).toEqual(expect.arrayContaining(['continue', 'remainingItemCount', 'total']));
    for (const repeatable of ['sort', 'labelSelector', 'fieldSelector']) {
      expect(byName[repeatable]).toMatchObject({ in: 'query', explode: true, schema: { type: 'array', items: { type: 'string' } } });
    }
    expect(list.responses['200'].content['application/json'].schema).toEqual({ $ref: `#/components/schemas/${PERSON}List` });
    expect(doc.components.schemas[`${PERSON}List`].properties.items.items).toEqual({ $ref: `#/components/schemas/${PERSON}` });

    const create = doc.paths[PERSONS].post;
    expect(create.requestBody.content['application/json'].schema).toEqual({ $ref: `#/components/schemas/${PERSON}` });
    expect(Object.keys(create.responses).sort()).toEqual(['201', '400', '401', '403', '404', '409', '415', '422']);
    for (const code of ['400', '401', '403', '404', '409', '415', '422']) {
      const name = create.responses[code].$ref.split('/').pop();
      expect(doc.components.responses[name].content['application/problem+json'].schema).toEqual({ $ref: '#/components/schemas/Problem' });
    }
    expect(doc.components.schemas.Problem.required).toEqual(['type', 'title', 'status', 'detail', 'instance']);
    const patch = doc.paths[`${PERSONS}/{name}`].patch;
    expect(Object.keys(patch.requestBody.content).sort()).toEqual(['application/json-patch+json', 'application/merge-patch+json']);
    expect(patch.requestBody.content['application/json-patch+json'].schema).toEqual({ $ref: '#/components/schemas/JsonPatch' });

    // The model's schema as validated, with its $defs and recursion inside components/schemas.
    const person = doc.components.schemas[PERSON];
    expect(person.required).toEqual(['spec']);
    expect(person.properties.metadata).toEqual({ $ref: '#/components/schemas/ObjectMeta' });
    expect(person.properties.spec).toEqual({ $ref: `#/components/schemas/${PERSON}_PersonSpec` });
    const spec = doc.components.schemas[`${PERSON}_PersonSpec`];
    expect(spec.properties.age).toEqual({ type: 'integer', minimum: 0, maximum: 150, description: 'Age in years.' });
    expect(spec.properties.gender.enum).toEqual(['MALE', 'FEMALE']);
    expect(spec.properties.otherPerson.$ref).toBe(`#/components/schemas/${PERSON}`);
    expect(person.properties.status.properties.phase).toEqual({ type: 'string' });

    // $defs that reference each other
    const ops = (await call(gw, 'GET', '/openapi/v3/apis/ops.example.com/v1')).body;
    expect(ops.components.schemas.OpsExampleComV1Job_JobSpec.properties.steps.items).toEqual({ $ref: '#/components/schemas/OpsExampleComV1Job_Step' });
  });

  it('qualifies operationIds in /openapi.json, where two groups share a kind', async () => {
    const doc = (await call(gw, 'GET', '/openapi.json')).body;
    const ids = new Set(operations(doc).map((o) => o.op.operationId));
    for (const id of ['listPeopleExampleComV1alpha1Persons', 'createPeopleExampleComV1alpha1Person', 'listCrmExampleNetV1People', 'createCrmExampleNetV1Person', 'getCoreV1alpha1User', 'patchPluginSvcRunV1alpha1Plugin']) {
      expect(ids, id).toContain(id);
    }
    expect(doc.components.schemas.CrmExampleNetV1Person).toBeDefined();
    expect(doc.components.schemas[PERSON]).toBeDefined();
  });

  it('documents plugin custom routes, with the bodies the plugin describes', async () => {
    const doc = (await call(gw, 'GET', '/openapi/v3/apis/console.api.people.example.com/v1alpha1')).body;
    const base = '/apis/console.api.people.example.com/v1alpha1';
    expect(Object.keys(doc.paths).sort()).toEqual([`${base}/exports`, `${base}/imports`, `${base}/stats`]);
    const stats = doc.paths[`${base}/stats`].get;
    expect(stats.operationId).toBe('getPersonStats');
    expect(stats.summary).toBe('Count persons by gender');
    expect(stats.responses['200'].content['application/json'].schema.properties.total).toEqual({ type: 'integer' });
    const imports = doc.paths[`${base}/imports`].post;
    expect(imports.requestBody.content['application/x-ndjson'].schema).toEqual({ $ref: `#/components/schemas/${PERSON}` });
    expect(doc.components.schemas[PERSON]).toBeDefined(); // the reference resolves in this document too
    expect(doc.paths[`${base}/exports`].get.operationId).toBe('getExports');

    const ops = (await call(gw, 'GET', '/openapi/v3/apis/api.ops.example.com/v1')).body;
    const run = ops.paths['/apis/api.ops.example.com/v1/jobs/{job}/runs'].post;
    expect(run.operationId).toBe('postJobsByJobRuns');
    expect(run.parameters).toEqual([{ name: 'job', in: 'path', required: true, schema: { type: 'string' } }]);
  });

  it("documents the platform's own routes: personal access tokens and permissions", async () => {
    const tokens = (await call(gw, 'GET', '/openapi/v3/apis/uc.api.security.svc.run/v1alpha1')).body;
    const base = '/apis/uc.api.security.svc.run/v1alpha1/personalaccesstokens';
    expect(Object.fromEntries(operations(tokens).map((o) => [o.op.operationId, `${o.method} ${o.path}`]))).toEqual({
      createPersonalAccessToken: `post ${base}`,
      listPersonalAccessTokens: `get ${base}`,
      getPersonalAccessToken: `get ${base}/{name}`,
      revokePersonalAccessToken: `delete ${base}/{name}`,
    });
    const perms = (await call(gw, 'GET', '/openapi/v3/apis/api.console.svc.run/v1alpha1')).body;
    expect(perms.paths['/apis/api.console.svc.run/v1alpha1/users/{name}/permissions'].get.operationId).toBe('getUserPermissions');
  });

  it('refuses a route description that is not an object', async () => {
    const p = await plugin(gw, 'baddocs');
    expect(p.status.phase).toBe('FAILED');
    expect(p.status.reason).toContain('routes[0].openapi must be');
    expect(Object.keys((await call(gw, 'GET', '/openapi/v3')).body.paths).filter((k) => k.includes('baddocs'))).toEqual([]);
  });

  it('exposes no secret field: the password is write-only, no hash', async () => {
    const doc = (await call(gw, 'GET', '/openapi/v3/api/v1alpha1')).body;
    // no property anywhere that could hold a hash or a token
    const keys: string[] = [];
    const walk = (node: unknown): void => {
      if (Array.isArray(node)) return node.forEach(walk);
      if (!node || typeof node !== 'object') return;
      for (const [k, v] of Object.entries(node)) {
        if (k === 'properties') keys.push(...Object.keys(v as object));
        walk(v);
      }
    };
    walk(doc);
    expect(keys.filter((k) => /hash|token|secret|salt/i.test(k))).toEqual([]);
    const user = doc.components.schemas.CoreV1alpha1User;
    expect(user.properties.spec.properties.password.writeOnly).toBe(true);
    expect(Object.keys(user.properties.spec.properties).sort()).toEqual(['disabled', 'displayName', 'email', 'password']);
  });

  it('caches: content hash, ETag and 304, a stale hash redirects, unknown parameters are refused', async () => {
    const index = await call(gw, 'GET', '/openapi/v3');
    const url: string = index.body.paths['apis/people.example.com/v1alpha1'].serverRelativeURL;
    const hash = url.split('hash=')[1]!;
    const first = await call(gw, 'GET', url);
    expect(first.headers.get('etag')).toBe(`"${hash}"`);
    expect(first.headers.get('cache-control')).toContain('immutable');
    expect(first.headers.get('vary')).toContain('Authorization');
    expect(first.headers.get('x-content-type-options')).toBe('nosniff');
    const again = await fetch(gw.url + url, { headers: { authorization: (await import('../helpers/gateway.js')).adminAuth, 'if-none-match': `"${hash}"` } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe('');

    const plain = await call(gw, 'GET', '/openapi/v3/apis/people.example.com/v1alpha1');
    expect(plain.status).toBe(200);
    expect(plain.headers.get('etag')).toBe(`"${hash}"`);
    expect(plain.headers.get('cache-control')).toContain('no-cache');

    const stale = await fetch(`${gw.url}/openapi/v3/apis/people.example.com/v1alpha1?hash=0123`, {
      headers: { authorization: (await import('../helpers/gateway.js')).adminAuth },
      redirect: 'manual',
    });
    expect(stale.status).toBe(301);
    expect(stale.headers.get('location')).toBe(url);

    const all = await call(gw, 'GET', '/openapi.json');
    const etag = all.headers.get('etag')!;
    expect(etag).toMatch(/^"[0-9A-F]{128}"$/);
    expect((await call(gw, 'GET', '/openapi.json', undefined, { 'if-none-match': etag })).status).toBe(304);

    const typo = await call(gw, 'GET', '/openapi/v3/apis/people.example.com/v1alpha1?hsah=1');
    expect(typo.status).toBe(400);
    expect(typo.body.detail).toContain('hsah');
    expect((await call(gw, 'GET', '/openapi/v3/apis/nowhere.example.com/v1')).status).toBe(404);
    expect((await call(gw, 'PUT', '/openapi.json', {})).status).toBe(405);
  });
});
