/**
 * Limits on what a client controls (issue 11 findings 1, 7, 9), on both stores: every
 * violation is a 4xx problem naming the limit, and nothing is stored.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LIMITS } from '../../src/limits.js';
import { adminAuth, call, startTestGateway, STORES, type TestGateway } from '../helpers/gateway.js';
import { wsClient } from '../graphql/helpers.js';

const PERSONS = '/apis/people.example.com/v1alpha1/persons';
const H = { authorization: adminAuth };

/** `{"spec":{"name":"x","otherPerson":{"spec":{…}}}}` nested `levels` Persons deep, as text. */
function deepPerson(levels: number): string {
  return '{"spec":{"name":"x","otherPerson":'.repeat(levels) + '{"spec":{"name":"leaf"}}' + '}}'.repeat(levels);
}
const deepValue = (levels: number) => '{"a":'.repeat(levels) + '1' + '}'.repeat(levels);

async function count(gw: TestGateway): Promise<number> {
  const r = await call(gw, 'GET', `${PERSONS}?size=1`, undefined, H);
  return r.body.total;
}

describe.each(STORES)('client-controlled limits (%s)', (kind) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(kind);
    expect((await call(gw, 'POST', PERSONS, { metadata: { name: 'base' }, spec: { name: 'Base' } }, H)).status).toBe(201);
  });
  afterAll(() => gw?.dispose());

  describe('JSON nesting depth', () => {
    it('a create nesting spec.otherPerson 3,000 deep is 400 naming the limit (was 500, ajv stack overflow)', async () => {
      const body = `{"metadata":{"name":"deep"},${deepPerson(3000).slice(1)}`;
      const r = await call(gw, 'POST', PERSONS, body, H);
      expect(r.status).toBe(400);
      expect(r.headers.get('content-type')).toBe('application/problem+json');
      expect(r.body.detail).toContain(`JSON nesting depth ${LIMITS.jsonDepth}`);
      expect((await call(gw, 'GET', `${PERSONS}/deep`, undefined, H)).status).toBe(404);
    });

    it('a recursive schema validates nesting up to the limit (20 Persons deep is accepted)', async () => {
      const body = `{"metadata":{"name":"twenty"},${deepPerson(20).slice(1)}`;
      const r = await call(gw, 'POST', PERSONS, body, H);
      expect(r.status).toBe(201);
      expect(JSON.stringify(r.body)).toContain('leaf');
    });

    it('a JSON patch adding a value 10,000 deep is 400 (was 500, fast-json-patch)', async () => {
      const body = `[{"op":"add","path":"/spec/extra","value":${deepValue(10_000)}}]`;
      const r = await call(gw, 'PATCH', `${PERSONS}/base`, body, { ...H, 'content-type': 'application/json-patch+json' });
      expect(r.status).toBe(400);
      expect(r.body.detail).toContain('nesting depth');
    });

    it('a JSON patch moving a value into its own child is 400 problem and the object is unchanged (was 500)', async () => {
      const before = await call(gw, 'GET', `${PERSONS}/base`, undefined, H);
      for (const op of [
        { op: 'move', from: '', path: '/spec' }, // the whole document into itself: was a circular document, 500
        { op: 'move', from: '/spec', path: '/spec/x' },
        { op: 'move', from: '/spec', path: '/spec/name/x' },
        { op: 'move', from: '/metadata/labels', path: '/metadata/labels/a' },
      ]) {
        const r = await call(gw, 'PATCH', `${PERSONS}/base`, JSON.stringify([op]), { ...H, 'content-type': 'application/json-patch+json' });
        expect(r.status, JSON.stringify(op)).toBe(400);
        expect(r.headers.get('content-type')).toBe('application/problem+json');
        expect(r.body.detail).toContain('into its own child');
      }
      // A move to a sibling still works (and is not mistaken for a child: "/spec/name" vs "/spec/nameX").
      const ok = await call(gw, 'PATCH', `${PERSONS}/base`, JSON.stringify([{ op: 'move', from: '/spec/name', path: '/spec/nameX' }, { op: 'move', from: '/spec/nameX', path: '/spec/name' }]), { ...H, 'content-type': 'application/json-patch+json' });
      expect(ok.status).toBe(200);
      const after = await call(gw, 'GET', `${PERSONS}/base`, undefined, H);
      expect(after.body.spec).toEqual(before.body.spec);
    });

    it('a merge patch 20,000 deep is 400 (was 500 in the MongoDB store) and the object is unchanged', async () => {
      const before = await call(gw, 'GET', `${PERSONS}/base`, undefined, H);
      const body = `{"spec":{"otherPerson":${deepPerson(20_000)}}}`;
      const r = await call(gw, 'PATCH', `${PERSONS}/base`, body, { ...H, 'content-type': 'application/merge-patch+json' });
      expect(r.status).toBe(400);
      const after = await call(gw, 'GET', `${PERSONS}/base`, undefined, H);
      expect(after.body).toEqual(before.body);
    });

    it('GraphQL variables nested deeper than the limit are BAD_REQUEST (POST door and yoga)', async () => {
      const query = 'mutation($p: JSON!) { peopleExampleCom_v1alpha1_patchPerson(name: "base", patch: $p) { metadata { name } } }';
      const body = `{"query":${JSON.stringify(query)},"variables":{"p":{"spec":{"x":${deepValue(5000)}}}}}`;
      for (const accept of ['application/json', 'text/event-stream']) {
        const r = await fetch(`${gw.url}/graphql`, {
          method: 'POST',
          headers: { ...H, 'content-type': 'application/json', accept },
          body,
        });
        const text = await r.text();
        expect(r.status, accept).toBeLessThan(500);
        expect(text, accept).toContain('BAD_REQUEST');
        expect(text, accept).toMatch(/nested more than 64 levels/);
      }
      // graphql-ws runs operations through the envelop chain (not the HTTP body check).
      const client = wsClient(gw, { authorization: adminAuth });
      try {
        const variables = JSON.parse(`{"p":{"spec":{"x":${deepValue(100)}}}}`);
        const results: any[] = [];
        for await (const r of client.iterate({ query, variables })) results.push(r);
        expect(results).toEqual([]);
      } catch (errors) {
        expect(JSON.stringify(errors)).toMatch(/nested more than 64 levels/);
      } finally {
        await client.dispose();
      }
      const stored = await call(gw, 'GET', `${PERSONS}/base`, undefined, H);
      expect(stored.body.spec.x).toBeUndefined();
    });
  });

  describe('object and metadata size', () => {
    it('an object over 1 MiB is 422 naming the limit; nothing stored', async () => {
      const before = await count(gw);
      const big = 'x'.repeat(LIMITS.objectBytes);
      const r = await call(gw, 'POST', PERSONS, { metadata: { name: 'big' }, spec: { name: 'Big', note: big } }, H);
      expect(r.status).toBe(422);
      expect(r.body.errors[0]).toMatchObject({ field: '(object)' });
      expect(r.body.errors[0].message).toContain('limit: object size');
      expect(await count(gw)).toBe(before);
      const p = await call(gw, 'PATCH', `${PERSONS}/base`, { metadata: { annotations: { 'a.example.com/x': big } } }, {
        ...H,
        'content-type': 'application/merge-patch+json',
      });
      expect(p.status).toBe(422);
    });

    it('labels, annotations and finalizers are bounded in number and size (422)', async () => {
      const many = (n: number, v = 'v') => Object.fromEntries(Array.from({ length: n }, (_, i) => [`a.example.com/k${i}`, v]));
      const cases = [
        [{ labels: many(LIMITS.labels + 1) }, 'metadata.labels', 'labels per object'],
        [{ annotations: many(LIMITS.annotations + 1) }, 'metadata.annotations', 'annotations per object'],
        [{ annotations: { 'a.example.com/big': 'y'.repeat(LIMITS.annotationBytes) } }, 'metadata.annotations', 'annotation size'],
        [{ finalizers: Array.from({ length: LIMITS.finalizers + 1 }, (_, i) => `a.example.com/f${i}`) }, 'metadata.finalizers', 'finalizers per object'],
      ] as const;
      for (const [meta, field, limit] of cases) {
        const r = await call(gw, 'POST', PERSONS, { metadata: { name: 'meta', ...meta }, spec: { name: 'M' } }, H);
        expect(r.status, field).toBe(422);
        expect(r.body.errors[0].field).toBe(field);
        expect(r.body.errors[0].message).toContain(limit);
      }
      const ok = await call(gw, 'POST', PERSONS, { metadata: { name: 'meta', labels: many(LIMITS.labels) }, spec: { name: 'M' } }, H);
      expect(ok.status).toBe(201);
    });
  });

  describe('list parameters', () => {
    it('selector length, selector terms and sort keys are bounded (400 naming the limit)', async () => {
      const long = `a.example.com/k=${'v'.repeat(LIMITS.selectorChars)}`;
      let r = await call(gw, 'GET', `${PERSONS}?labelSelector=${encodeURIComponent(long.slice(0, 4000))}&labelSelector=${'b'.repeat(200)}`, undefined, H);
      expect(r.status).toBe(400);
      expect(r.body.detail).toContain('limit: selector length');
      const terms = Array.from({ length: LIMITS.selectorTerms + 1 }, (_, i) => `k${i}`).join(',');
      r = await call(gw, 'GET', `${PERSONS}?labelSelector=${terms}`, undefined, H);
      expect(r.status).toBe(400);
      expect(r.body.detail).toContain('limit: selector terms');
      const sorts = Array.from({ length: LIMITS.sortKeys + 1 }, () => 'sort=metadata.name,asc').join('&');
      r = await call(gw, 'GET', `${PERSONS}?${sorts}`, undefined, H);
      expect(r.status).toBe(400);
      expect(r.body.detail).toContain('limit: sort keys');
      r = await call(gw, 'GET', `${PERSONS}?size=${LIMITS.pageSize + 1}`, undefined, H);
      expect(r.status).toBe(400);
    });

    it('an unpaged list over 32 MiB is 400 asking for size; pages still work (finding 7)', async () => {
      const filler = 'z'.repeat(LIMITS.objectBytes - 4096);
      const n = Math.ceil(LIMITS.responseBytes / filler.length) + 1;
      const label = { 'big.example.com/set': 'yes' };
      for (let i = 0; i < n; i++) {
        const r = await call(gw, 'POST', PERSONS, { metadata: { name: `bulk-${i}`, labels: label }, spec: { name: 'Bulk', note: filler } }, H);
        expect(r.status).toBe(201);
      }
      const sel = 'labelSelector=big.example.com/set=yes';
      const all = await call(gw, 'GET', `${PERSONS}?${sel}`, undefined, H);
      expect(all.status).toBe(400);
      expect(all.body.detail).toContain('limit: response size');
      expect(all.body.detail).toContain('size');
      const page = await call(gw, 'GET', `${PERSONS}?${sel}&size=5&page=2`, undefined, H);
      expect(page.status).toBe(200);
      expect(page.body).toMatchObject({ total: n, size: 5, page: 2 });
      expect(page.body.items).toHaveLength(5);
      const small = await call(gw, 'GET', `${PERSONS}?labelSelector=big.example.com/set!=yes`, undefined, H);
      expect(small.status).toBe(200);
    }, 120_000);
  });
});
