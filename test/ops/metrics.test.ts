/**
 * GET /metrics (docs/API.md §10): RBAC as the non-resource URL /metrics, the named metrics with
 * their labels, one registry per gateway, and bounded labels (no object names, no raw paths,
 * capped GraphQL operation names).
 */
import { register } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANONYMOUSLY, call, STORES, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { bind, createRole, createUser, watchSocket } from '../helpers/rbac.js';
import { MAX_OPERATION_NAMES } from '../../src/observability/metrics.js';
import { scrape, value } from './prom.js';
import { wsClient } from '../graphql/helpers.js';

const PERSONS = '/apis/people.example.com/v1alpha1/persons';
const PERSON_LABELS = { group: 'people.example.com', version: 'v1alpha1', resource: 'persons' };

describe.each(STORES)('/metrics (%s)', (kind) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(kind);
  });
  afterAll(async () => {
    await gw?.dispose();
  });

  it('anonymous 401, a plain user 403, the administrator and a user granted get on /metrics 200', async () => {
    const anon = await call(gw, 'GET', '/metrics', undefined, ANONYMOUSLY);
    expect(anon.status).toBe(401);
    expect(anon.headers.get('content-type')).toBe('application/problem+json');
    const plain = await createUser(gw, 'plain-metrics');
    const denied = await call(gw, 'GET', '/metrics', undefined, { authorization: plain });
    expect(denied.status).toBe(403);
    expect(denied.headers.get('content-type')).toBe('application/problem+json');
    const admin = await call(gw, 'GET', '/metrics');
    expect(admin.status).toBe(200);
    expect(admin.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const scraper = await createUser(gw, 'scraper');
    expect((await createRole(gw, 'metrics-reader', [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }])).status).toBe(201);
    expect((await bind(gw, 'scraper', 'metrics-reader')).status).toBe(201);
    let granted = await call(gw, 'GET', '/metrics', undefined, { authorization: scraper });
    for (let i = 0; i < 50 && granted.status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
      granted = await call(gw, 'GET', '/metrics', undefined, { authorization: scraper });
    }
    expect(granted.status).toBe(200);
    expect(granted.body).toContain('apiserver_request_total');
    // The grant is for /metrics only.
    expect((await call(gw, 'GET', PERSONS, undefined, { authorization: scraper })).status).toBe(403);
    expect((await call(gw, 'GET', '/metrics?x=1')).status).toBe(400);
    expect((await call(gw, 'POST', '/metrics', {})).status).toBe(405);
  });

  it('counts REST requests by verb, group, version, resource and code, with latencies; store operations; runtime metrics', async () => {
    expect((await call(gw, 'POST', PERSONS, { metadata: { name: 'metrics-ann' }, spec: { name: 'Ann' } })).status).toBe(201);
    expect((await call(gw, 'GET', `${PERSONS}/metrics-ann`)).status).toBe(200);
    expect((await call(gw, 'GET', `${PERSONS}/metrics-nobody`)).status).toBe(404);
    const { samples } = await scrape(gw);
    expect(value(samples, 'apiserver_request_total', { verb: 'create', ...PERSON_LABELS, code: '201' })).toBe(1);
    expect(value(samples, 'apiserver_request_total', { verb: 'get', ...PERSON_LABELS, code: '200' })).toBe(1);
    expect(value(samples, 'apiserver_request_total', { verb: 'get', ...PERSON_LABELS, code: '404' })).toBe(1);
    expect(value(samples, 'apiserver_request_duration_seconds_count', { verb: 'get', ...PERSON_LABELS })).toBe(2);
    expect(value(samples, 'apiserver_request_duration_seconds_bucket', { verb: 'create', ...PERSON_LABELS, le: '+Inf' })).toBe(1);
    expect(value(samples, 'svc_store_operation_duration_seconds_count', { store: kind, operation: 'create' })).toBeGreaterThanOrEqual(1);
    expect(value(samples, 'svc_store_operation_duration_seconds_count', { store: kind, operation: 'get' })).toBeGreaterThanOrEqual(2);
    expect(value(samples, 'process_cpu_seconds_total')).toBeGreaterThan(0);
    expect(value(samples, 'nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
    // No default global registry is used: two gateways in one process keep their own counts.
    expect(await register.getMetricsAsJSON()).toEqual([]);
  });

  it('counts GraphQL operations by type, name and code (POST door, yoga and errors)', async () => {
    const q = await call(gw, 'POST', '/graphql', { query: 'query CountMe { __typename }' });
    expect(q.status).toBe(200);
    // GET is served by yoga's handler, not the POST door.
    expect((await call(gw, 'GET', `/graphql?query=${encodeURIComponent('query CountMeToo { __typename }')}`)).status).toBe(200);
    const plain = await createUser(gw, 'plain-graphql');
    const denied = await call(gw, 'POST', '/graphql', { query: 'mutation Sneaky { __typename }' }, { authorization: plain });
    expect(denied.status).toBe(200);
    expect((await call(gw, 'POST', '/graphql', { query: 'query Broken { noSuchField }' })).body.errors).toHaveLength(1);
    expect((await call(gw, 'POST', '/graphql', { query: 'query {' })).body.errors).toHaveLength(1);
    const { samples } = await scrape(gw);
    expect(value(samples, 'graphql_operations_total', { operation_type: 'query', operation_name: 'Broken', code: 'GRAPHQL_VALIDATION_FAILED' })).toBe(1);
    expect(value(samples, 'graphql_operations_total', { code: 'GRAPHQL_PARSE_FAILED' })).toBe(1);
    expect(value(samples, 'graphql_operations_total', { operation_type: 'query', operation_name: 'CountMe', code: 'OK' })).toBe(1);
    expect(value(samples, 'graphql_operations_total', { operation_type: 'query', operation_name: 'CountMeToo', code: 'OK' })).toBe(1);
    expect(value(samples, 'graphql_operations_total', { operation_type: 'mutation', operation_name: 'Sneaky' })).toBe(1);
  });

  it('svc_watchers counts open REST and GraphQL watches of a model', async () => {
    const before = value((await scrape(gw)).samples, 'svc_watchers', PERSON_LABELS) ?? 0;
    expect(before).toBe(0);
    const w = watchSocket(`${gw.url}${PERSONS}`, (await import('../helpers/gateway.js')).adminAuth);
    expect(await w.opened).toBe(101);
    await w.until(() => w.events.length > 0);
    expect(value((await scrape(gw)).samples, 'svc_watchers', PERSON_LABELS)).toBe(1);
    w.ws.close();
    let after = 1;
    for (let i = 0; i < 50 && after !== 0; i++) {
      await new Promise((r) => setTimeout(r, 50));
      after = value((await scrape(gw)).samples, 'svc_watchers', PERSON_LABELS) ?? 0;
    }
    expect(after).toBe(0);
  });

  it('svc_watchers counts ndjson watches (GET ?watch=true)', async () => {
    const abort = new AbortController();
    const res = await fetch(`${gw.url}${PERSONS}?watch=true`, { headers: { authorization: (await import('../helpers/gateway.js')).adminAuth }, signal: abort.signal });
    expect(res.status).toBe(200);
    let open = 0;
    for (let i = 0; i < 100 && open !== 1; i++) {
      open = value((await scrape(gw)).samples, 'svc_watchers', PERSON_LABELS) ?? 0;
      if (open !== 1) await new Promise((r) => setTimeout(r, 50));
    }
    expect(open).toBe(1);
    abort.abort();
    await res.body?.cancel().catch(() => undefined);
    for (let i = 0; i < 100 && open !== 0; i++) {
      await new Promise((r) => setTimeout(r, 50));
      open = value((await scrape(gw)).samples, 'svc_watchers', PERSON_LABELS) ?? 0;
    }
    expect(open).toBe(0);
    const { samples } = await scrape(gw);
    expect(value(samples, 'apiserver_request_total', { verb: 'watch', ...PERSON_LABELS })).toBeGreaterThanOrEqual(1);
    // A watch lasts as long as it stays open: it is counted, not timed.
    expect(value(samples, 'apiserver_request_duration_seconds_count', { verb: 'watch' })).toBeUndefined();
  });

  it('svc_watchers counts GraphQL subscriptions too', async () => {
    const client = wsClient(gw, { authorization: (await import('../helpers/gateway.js')).adminAuth });
    const events = client.iterate({ query: 'subscription Follow { peopleExampleCom_v1alpha1_watchPersons { type } }' });
    const first = events.next();
    let open = 0;
    for (let i = 0; i < 100 && open !== 1; i++) {
      await new Promise((r) => setTimeout(r, 50));
      open = value((await scrape(gw)).samples, 'svc_watchers', PERSON_LABELS) ?? 0;
    }
    expect(open).toBe(1);
    await events.return?.();
    void first.catch(() => undefined);
    await client.dispose();
    for (let i = 0; i < 100 && open !== 0; i++) {
      await new Promise((r) => setTimeout(r, 50));
      open = value((await scrape(gw)).samples, 'svc_watchers', PERSON_LABELS) ?? 0;
    }
    expect(open).toBe(0);
    expect(value((await scrape(gw)).samples, 'graphql_operations_total', { operation_type: 'subscription', operation_name: 'Follow', code: 'OK' })).toBe(1);
  });

  it('labels stay bounded: object names and unknown paths never become label values', async () => {
    const names = Array.from({ length: 20 }, (_, i) => `zz-unbounded-${i}-${Math.random().toString(36).slice(2, 8)}`);
    for (const n of names) {
      expect((await call(gw, 'GET', `${PERSONS}/${n}`)).status).toBe(404);
      await call(gw, 'GET', `/no/such/${n}`);
      await call(gw, 'GET', `/apis/${n}.example.com/v1/${n}`);
      await call(gw, 'POST', '/graphql', { query: `query Q${n.replace(/-/g, '_')} { __typename }` });
    }
    const { text, samples } = await scrape(gw);
    for (const n of names) expect(text).not.toContain(n);
    const resources = new Set(samples.filter((s) => s.name === 'apiserver_request_total').map((s) => s.labels.resource));
    expect([...resources].every((r) => r === '' || ['persons', 'users', 'roles', 'rolebindings', 'plugins'].includes(r!)), [...resources].join()).toBe(true);
    const groups = new Set(samples.filter((s) => s.name === 'apiserver_request_total').map((s) => s.labels.group));
    expect(groups.has('')).toBe(true); // unknown and non-resource paths collapse to one value
    for (let i = 0; i < MAX_OPERATION_NAMES + 20; i++) await call(gw, 'POST', '/graphql', { query: `query Many${i} { __typename }` });
    const ops = (await scrape(gw)).samples.filter((s) => s.name === 'graphql_operations_total');
    const opNames = new Set(ops.map((s) => s.labels.operation_name));
    expect(opNames.size).toBeLessThanOrEqual(MAX_OPERATION_NAMES + 2);
    expect(opNames.has('other')).toBe(true);
  });
});
