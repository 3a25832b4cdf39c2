/**
 * The audit log (docs/API.md §10): SVC_AUDIT_LOG gets one JSON line per write and per denied
 * request, at ResponseComplete, through REST, GraphQL, watches and custom routes, with exactly
 * the contract's fields and no body or secret; SVC_AUDIT_POLICY level None suppresses lines.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, ANONYMOUSLY, basicAuth, call, STORES, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { createUser, watchSocket } from '../helpers/rbac.js';
import { openAuditLog, parsePolicy } from '../../src/observability/audit.js';
import { loadConfig } from '../../src/config.js';

const PERSONS = '/apis/people.example.com/v1alpha1/persons';
const FIELDS = ['auditID', 'stage', 'verb', 'user', 'sourceIPs', 'objectRef', 'requestURI', 'responseStatus', 'requestReceivedTimestamp', 'stageTimestamp'];

async function lines(file: string): Promise<any[]> {
  const text = await readFile(file, 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

/** Waits until the log holds more than `after` lines and no more arrive for a moment; returns the new ones. */
async function newLines(file: string, after: number, atLeast = 1): Promise<any[]> {
  let all = await lines(file);
  for (let i = 0; i < 100 && all.length < after + atLeast; i++) {
    await new Promise((r) => setTimeout(r, 30));
    all = await lines(file);
  }
  await new Promise((r) => setTimeout(r, 100));
  return (await lines(file)).slice(after);
}

describe.each(STORES)('audit log (%s)', (kind) => {
  let dir: string;
  let file: string;
  let gw: TestGateway;
  let plain: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-audit-'));
    file = join(dir, 'audit.log');
    gw = await startTestGateway(kind, { config: { auditLog: file } });
    plain = await createUser(gw, 'plain-audit', 'plain-audit-password-9');
  });
  afterAll(async () => {
    await gw?.dispose();
    await rm(dir, { recursive: true, force: true });
  });

  it('one line per REST write with the contract fields; reads are not logged', async () => {
    const n = (await lines(file)).length;
    expect((await call(gw, 'POST', PERSONS, { metadata: { name: 'audit-ann' }, spec: { name: 'Ann' } })).status).toBe(201);
    const [line, ...rest] = await newLines(file, n);
    expect(rest).toEqual([]);
    expect(Object.keys(line).sort()).toEqual([...FIELDS].sort());
    expect(line).toMatchObject({
      stage: 'ResponseComplete',
      verb: 'create',
      user: { username: 'admin' },
      // A create names the object it made.
      objectRef: { apiGroup: 'people.example.com', apiVersion: 'v1alpha1', resource: 'persons', name: 'audit-ann', subresource: '' },
      requestURI: PERSONS,
      responseStatus: { code: 201 },
    });
    expect(line.auditID).toMatch(/^[0-9a-f-]{36}$/);
    expect(line.sourceIPs).toEqual(['127.0.0.1']);
    expect(Date.parse(line.stageTimestamp)).toBeGreaterThanOrEqual(Date.parse(line.requestReceivedTimestamp));
    expect(JSON.stringify(line)).not.toContain('Ann'); // no body

    const m = (await lines(file)).length;
    expect((await call(gw, 'GET', `${PERSONS}/audit-ann`)).status).toBe(200);
    expect((await call(gw, 'GET', PERSONS)).status).toBe(200);
    expect((await call(gw, 'PATCH', `${PERSONS}/audit-ann`, { spec: { age: 3 } }, { 'content-type': 'application/merge-patch+json' })).status).toBe(200);
    const got = (await call(gw, 'GET', `${PERSONS}/audit-ann`)).body;
    expect((await call(gw, 'PUT', `${PERSONS}/audit-ann`, got)).status).toBe(200);
    expect((await call(gw, 'DELETE', `${PERSONS}/audit-ann`)).status).toBe(200);
    expect((await call(gw, 'DELETE', `${PERSONS}?labelSelector=audit%3Dnone`)).status).toBe(200);
    const writes = await newLines(file, m, 4);
    expect(writes.map((l) => [l.verb, l.objectRef.name, l.responseStatus.code])).toEqual([
      ['patch', 'audit-ann', 200],
      ['update', 'audit-ann', 200],
      ['delete', 'audit-ann', 200],
      ['deletecollection', '', 200],
    ]);
    expect(writes[3].requestURI).toBe(`${PERSONS}?labelSelector=audit%3Dnone`);
  });

  it('denied requests (401, 403) are logged, with no password, token or body', async () => {
    const n = (await lines(file)).length;
    expect((await call(gw, 'GET', PERSONS, undefined, ANONYMOUSLY)).status).toBe(401);
    expect((await call(gw, 'GET', `${PERSONS}/x`, undefined, { authorization: plain })).status).toBe(403);
    expect((await call(gw, 'GET', PERSONS, undefined, { authorization: basicAuth('admin', 'wrong-password-77') })).status).toBe(401);
    expect((await call(gw, 'POST', '/api/v1alpha1/users', { metadata: { name: 'audited-user' }, spec: { password: 'user-secret-password-5' } })).status).toBe(201);
    const got = await newLines(file, n, 4);
    expect(got.map((l) => [l.verb, l.user.username, l.responseStatus.code])).toEqual([
      ['list', 'anonymous', 401],
      ['get', 'plain-audit', 403],
      ['list', 'anonymous', 401],
      ['create', 'admin', 201],
    ]);
    expect(got[1].objectRef).toMatchObject({ resource: 'persons', name: 'x' });
    const text = await readFile(file, 'utf8');
    for (const secret of ['wrong-password-77', 'user-secret-password-5', 'plain-audit-password-9', 'test-admin-password', 'Basic ']) {
      expect(text).not.toContain(secret);
    }
  });

  it('GraphQL: each mutation field and each denied field is logged; the request URI is /graphql', async () => {
    const n = (await lines(file)).length;
    const create = await call(gw, 'POST', '/graphql', {
      query: 'mutation { peopleExampleCom_v1alpha1_createPerson(object: {metadata: {name: "gql-audit"}, spec: {name: "Gee"}}) { metadata { name } } }',
    });
    expect(create.status).toBe(200);
    expect(create.body.errors, JSON.stringify(create.body)).toBeUndefined();
    const denied = await call(gw, 'POST', '/graphql', { query: '{ peopleExampleCom_v1alpha1_persons { total } }' }, { authorization: plain });
    expect(denied.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const got = await newLines(file, n, 2);
    expect(got.map((l) => [l.verb, l.user.username, l.objectRef.resource, l.objectRef.name, l.responseStatus.code, l.requestURI])).toEqual([
      ['create', 'admin', 'persons', 'gql-audit', 200, '/graphql'],
      ['list', 'plain-audit', 'persons', '', 403, '/graphql'],
    ]);
    expect(JSON.stringify(got)).not.toContain('Gee');
  });

  it('a denied watch and custom-route writes are logged', async () => {
    const n = (await lines(file)).length;
    const w = watchSocket(`${gw.url}${PERSONS}`, plain);
    expect(await w.opened).toBe(403);
    const imports = '/apis/console.api.people.example.com/v1alpha1/imports';
    const r = await fetch(gw.url + imports, { method: 'POST', headers: { authorization: adminAuth, 'content-type': 'application/x-ndjson' }, body: '' });
    await r.text();
    const deniedImport = await fetch(gw.url + imports, { method: 'POST', headers: { authorization: plain }, body: '{}' });
    expect(deniedImport.status).toBe(403);
    await deniedImport.text();
    const got = await newLines(file, n, 3);
    expect(got.map((l) => [l.verb, l.user.username, l.objectRef.resource, l.responseStatus.code])).toEqual([
      ['watch', 'plain-audit', 'persons', 403],
      ['create', 'admin', 'imports', r.status],
      ['create', 'plain-audit', 'imports', 403],
    ]);
  });
});

describe('audit policy (embedded)', () => {
  let dir: string;
  let file: string;
  let gw: TestGateway;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-audit-policy-'));
    file = join(dir, 'audit.log');
    const policy = join(dir, 'policy.yaml');
    await writeFile(
      policy,
      ['rules:', '  - level: None', '    resources:', '      - group: people.example.com', '        resources: [persons]', '  - level: Metadata', ''].join('\n'),
    );
    gw = await startTestGateway('embedded', { config: { auditLog: file, auditPolicy: policy } });
  });
  afterAll(async () => {
    await gw?.dispose();
    await rm(dir, { recursive: true, force: true });
  });

  it('level None suppresses the lines of the resources it names; others stay at Metadata', async () => {
    const n = (await lines(file)).length;
    expect((await call(gw, 'POST', PERSONS, { metadata: { name: 'quiet' }, spec: { name: 'Q' } })).status).toBe(201);
    expect((await call(gw, 'POST', '/api/v1alpha1/roles', { metadata: { name: 'loud' }, rules: [] })).status).toBe(201);
    const got = await newLines(file, n, 1);
    expect(got.map((l) => [l.verb, l.objectRef.resource])).toEqual([['create', 'roles']]);
  });

  it('a policy with an unknown level or field is refused with a clear message', () => {
    expect(() => parsePolicy('rules:\n  - level: RequestResponse\n')).toThrow(/level must be None or Metadata/);
    expect(() => parsePolicy('rules:\n  - level: None\n    resource: []\n')).toThrow(/resource is not a policy field/);
    expect(() => parsePolicy('nope: 1\n')).toThrow(/"rules" list/);
  });
});

describe('audit configuration', () => {
  it('SVC_AUDIT_LOG and SVC_AUDIT_POLICY are read from the environment; unset means no audit log', () => {
    expect(loadConfig([], { SVC_AUDIT_LOG: '-', SVC_AUDIT_POLICY: '/etc/svc/audit.yaml' })).toMatchObject({ auditLog: '-', auditPolicy: '/etc/svc/audit.yaml' });
    const none = loadConfig([], {});
    expect(none.auditLog).toBeUndefined();
    expect(none.auditPolicy).toBeUndefined();
  });

  it('an audit log path that cannot be written stops the start with its name', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'svc-audit-ro-'));
    try {
      // A directory cannot be opened for appending.
      expect(() => openAuditLog({ path: dir })).toThrow(new RegExp(`SVC_AUDIT_LOG: cannot open ${dir}`));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a policy file that cannot be read stops the start with its name', () => {
    expect(() => openAuditLog({ path: '-', policyFile: '/nonexistent/audit-policy.yaml' })).toThrow(/audit-policy\.yaml/);
  });
});
