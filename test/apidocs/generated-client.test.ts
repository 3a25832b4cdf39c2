/**
 * A client generated from the served document works unchanged (docs/API.md §8), on both stores:
 * openapi-typescript turns /openapi.json into types at test time, a small openapi-fetch program
 * is typechecked against them with tsc (strict; one `@ts-expect-error` proves the model types
 * are real), then the same program drives CRUD against the gateway: create, list with
 * selectors, get, merge patch, a 422 with its field errors, delete.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import openapiTS, { astToString } from 'openapi-typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, call, STORES, startTestGateway, type TestGateway } from '../helpers/gateway.js';

const ROOT = join(import.meta.dirname, '../..');

const CLIENT = `import createClient from 'openapi-fetch';
import type { components, paths } from './api.js';

type Person = components['schemas']['PeopleExampleComV1alpha1Person'];
const PERSONS = '/apis/people.example.com/v1alpha1/persons';
const PERSON = '/apis/people.example.com/v1alpha1/persons/{name}';

// @ts-expect-error spec.age is an integer in the model's schema
export const wrong: Person = { spec: { age: 'old' } };

export async function crud(baseUrl: string, authorization: string) {
  const client = createClient<paths>({ baseUrl, headers: { authorization } });
  const grace: Person = {
    apiVersion: 'people.example.com/v1alpha1',
    kind: 'Person',
    metadata: { name: 'grace', labels: { team: 'navy' } },
    spec: { name: 'Grace Hopper', age: 85, gender: 'FEMALE' },
  };
  const created = await client.POST(PERSONS, { body: grace });
  const other = await client.POST(PERSONS, {
    body: { ...grace, metadata: { name: 'alan', labels: { team: 'navy' } }, spec: { name: 'Alan', gender: 'MALE' } },
  });
  const listed = await client.GET(PERSONS, {
    params: { query: { labelSelector: ['team=navy'], fieldSelector: ['spec.gender=FEMALE'], sort: ['metadata.name,asc'], page: 1, size: 10 } },
  });
  const names: string[] = (listed.data?.items ?? []).map((p) => p.metadata?.name ?? '?');
  const got = await client.GET(PERSON, { params: { path: { name: 'grace' } } });
  const age: number | undefined = got.data?.spec.age;
  const patched = await client.PATCH(PERSON, {
    params: { path: { name: 'grace' } },
    body: { spec: { age: 86 } },
    headers: { 'content-type': 'application/merge-patch+json' },
  });
  const invalid = await client.POST(PERSONS, { body: { ...grace, metadata: { name: 'bad' }, spec: { name: 'Bad', age: -1 } } });
  const fields: string[] = (invalid.error?.errors ?? []).map((e) => e.field);
  const deleted = await client.DELETE(PERSON, { params: { path: { name: 'grace' } } });
  const gone = await client.GET(PERSON, { params: { path: { name: 'grace' } } });
  return {
    created: [created.response.status, created.data?.metadata?.name, created.data?.metadata?.version],
    other: other.response.status,
    listed: [listed.response.status, listed.data?.total, names],
    got: [got.response.status, age, got.data?.spec.gender],
    patched: [patched.response.status, patched.data?.spec.age, patched.data?.spec.name],
    invalid: [invalid.response.status, invalid.error?.status, fields],
    deleted: [deleted.response.status, typeof deleted.data?.metadata?.deletionTimestamp],
    gone: [gone.response.status, gone.error?.status],
  };
}
`;

describe.each(STORES)('a client generated from the document (%s)', (kind) => {
  let gw: TestGateway;
  let dir: string;
  beforeAll(async () => {
    gw = await startTestGateway(kind);
    // Inside the repository, so `openapi-fetch` resolves and vitest transforms the program.
    dir = await mkdtemp(join(import.meta.dirname, '.client-'));
  });
  afterAll(async () => {
    await gw?.dispose();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('typechecks and drives CRUD unchanged', { timeout: 120_000 }, async () => {
    const doc = await call(gw, 'GET', '/openapi.json');
    expect(doc.status).toBe(200);
    await writeFile(join(dir, 'api.ts'), astToString(await openapiTS(doc.body)));
    await writeFile(join(dir, 'client.ts'), CLIENT);
    await writeFile(join(dir, 'package.json'), '{"type":"module"}\n');
    const tsc = join(ROOT, 'node_modules/typescript/bin/tsc');
    const args = ['--noEmit', '--strict', '--target', 'es2022', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--skipLibCheck', '--types', 'node'];
    const result = await promisify(execFile)(process.execPath, [tsc, ...args, join(dir, 'api.ts'), join(dir, 'client.ts')], { cwd: ROOT }).then(
      () => '',
      (e: { stdout?: string }) => e.stdout || String(e),
    );
    expect(result).toBe('');

    const { crud } = (await import(join(dir, 'client.ts'))) as { crud: (url: string, auth: string) => Promise<Record<string, unknown>> };
    const r = await crud(gw.url, adminAuth);
    expect(r).toEqual({
      created: [201, 'grace', 1],
      other: 201,
      listed: [200, 1, ['grace']],
      got: [200, 85, 'FEMALE'],
      patched: [200, 86, 'Grace Hopper'],
      invalid: [422, 422, ['spec.age']],
      deleted: [200, 'string'],
      gone: [404, 404],
    });
  });
});
