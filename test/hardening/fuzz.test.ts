/**
 * Property-based fuzzing (fast-check) of everything a client sends: paths, selectors, sort and
 * paging parameters, JSON bodies against the Person schema, merge and JSON patches, and GraphQL
 * documents, on both stores, over real HTTP. For every case: no 5xx, an answer on every
 * connection, the gateway alive, and a rejected request leaves the stored data unchanged
 * (object count and a checksum of every stored object, compared before and after).
 *
 * `npm test` runs FUZZ_RUNS cases per property (default 150); `npm run fuzz` runs 10,000.
 * The GraphQL tally counts 200 (read answered), 201 (a mutation wrote) and 400 (errors only).
 */
import { createHash } from 'node:crypto';
import { Agent, request } from 'node:http';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, STORES, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { awkwardMapArb, BASE, bodyArb, graphqlArb, jsonPatchArb, listParamsArb, mergePatchArb, methodArb, pathArb } from './fuzz-arbs.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 150);
/** FerretDB on a loaded machine answers a case (request + checksum) in ~60–150 ms. */
const TIMEOUT = Math.max(60_000, RUNS * 300);
/** A property never outlives its test: interrupted (a failure) before the test's timeout. */
const FC = { numRuns: RUNS, interruptAfterTimeLimit: TIMEOUT - 5_000, markInterruptAsFailure: true };
const agent = new Agent({ keepAlive: true, maxSockets: 4 });

interface Answer {
  status: number;
  body: string;
  type: string;
}

/** A request sent exactly as written (no URL normalisation), answered or failed (status 0). */
function send(gw: TestGateway, method: string, path: string, body?: string, type = 'application/json'): Promise<Answer> {
  const url = new URL(gw.url);
  return new Promise((resolve) => {
    const headers: Record<string, string> = { authorization: adminAuth };
    if (body !== undefined) {
      headers['content-type'] = type;
      headers['content-length'] = String(Buffer.byteLength(body));
    }
    const req = request({ host: url.hostname, port: url.port, method, path, headers, agent }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text, type: String(res.headers['content-type'] ?? '') }));
      res.on('error', () => resolve({ status: 0, body: 'response error', type: '' }));
    });
    req.on('error', (e) => resolve({ status: 0, body: `request error: ${e.message}`, type: '' }));
    req.end(body);
  });
}

/** Count and checksum of every stored Person (the test's data set stays small). */
async function snapshot(gw: TestGateway): Promise<string> {
  const r = await send(gw, 'GET', `${BASE}?sort=metadata.name,asc`);
  expect(r.status).toBe(200);
  const items = (JSON.parse(r.body) as { items: unknown[] }).items;
  return `${items.length}:${createHash('sha256').update(JSON.stringify(items)).digest('hex')}`;
}

describe.each(STORES)(`fuzzing (%s, ${RUNS} cases per property)`, (kind) => {
  let gw: TestGateway;
  let before: string;
  const outcomes: Record<string, Record<number, number>> = {};
  const tally = (prop: string, status: number) => {
    const t = (outcomes[prop] ??= {});
    t[status] = (t[status] ?? 0) + 1;
  };

  beforeAll(async () => {
    gw = await startTestGateway(kind);
    for (const name of ['target', 'other']) {
      const r = await send(gw, 'POST', BASE, JSON.stringify({ metadata: { name, labels: { 'a.example.com/k': 'v' } }, spec: { name: 'Ada', age: 36 } }));
      expect(r.status).toBe(201);
    }
    before = await snapshot(gw);
  });
  afterAll(async () => {
    for (const [prop, t] of Object.entries(outcomes)) console.log(`[figure] fuzz ${prop} (${kind}): ${JSON.stringify(t)}`);
    await gw?.dispose();
  });

  /** Checks one answer; on success restores the data set so every later rejection is compared to it. */
  async function judge(prop: string, r: Answer, what: string): Promise<void> {
    tally(prop, r.status);
    if (r.status === 0 || r.status >= 500) throw new Error(`${what} → ${r.status} ${r.body.slice(0, 300)}`);
    if (r.status >= 400 && r.status !== 405 && !r.type.includes('json')) throw new Error(`${what} → ${r.status} ${r.type}`);
    const now = await snapshot(gw);
    if (r.status >= 400) {
      if (now !== before) throw new Error(`${what} → ${r.status} but the stored data changed`);
      return;
    }
    await restore();
  }

  /** Puts the data set back: removes extra objects, recreates the two fixed ones. */
  async function restore(): Promise<void> {
    const list = JSON.parse((await send(gw, 'GET', BASE)).body) as { items: { metadata: { name: string; finalizers?: string[] } }[] };
    for (const o of list.items) {
      const name = o.metadata.name;
      if (o.metadata.finalizers?.length) {
        await send(gw, 'PATCH', `${BASE}/${name}`, '{"metadata":{"finalizers":null}}', 'application/merge-patch+json');
      }
      await send(gw, 'DELETE', `${BASE}/${name}`);
    }
    for (const name of ['target', 'other']) {
      await send(gw, 'POST', BASE, JSON.stringify({ metadata: { name, labels: { 'a.example.com/k': 'v' } }, spec: { name: 'Ada', age: 36 } }));
    }
    before = await snapshot(gw);
  }

  it('paths × methods', async () => {
    await fc.assert(
      fc.asyncProperty(methodArb, pathArb, async (method, path) => {
        // A DELETE of the whole collection is a legitimate request; everything else is fair game.
        fc.pre(!(method === 'DELETE' && /^\/apis\/people\.example\.com\/v1alpha1\/persons\/?$/.test(path)));
        await judge('paths', await send(gw, method, path, method === 'POST' || method === 'PUT' ? '{}' : undefined), `${method} ${path}`);
      }),
      FC,
    );
  }, TIMEOUT);

  it('selectors, sort and paging', async () => {
    await fc.assert(
      fc.asyncProperty(listParamsArb, fc.boolean(), async (params, asDelete) => {
        const q = new URLSearchParams();
        for (const [k, v] of Object.entries(params)) for (const one of Array.isArray(v) ? v : [v]) q.append(k, one);
        // deletecollection with a fuzzed selector must also never 5xx; it may legitimately delete.
        const method = asDelete && q.toString() !== '' ? 'DELETE' : 'GET';
        await judge('list parameters', await send(gw, method, `${BASE}?${q}`), `${method} ?${q}`);
      }),
      FC,
    );
  }, TIMEOUT);

  it('JSON bodies against the Person schema (create and update)', async () => {
    await fc.assert(
      fc.asyncProperty(bodyArb, fc.boolean(), async (body, update) => {
        const r = update ? await send(gw, 'PUT', `${BASE}/target`, body) : await send(gw, 'POST', BASE, body);
        await judge('bodies', r, `${update ? 'PUT' : 'POST'} ${body.slice(0, 200)}`);
      }),
      FC,
    );
  }, TIMEOUT);

  it('merge patches and JSON patches', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(mergePatchArb.map((p) => ['merge', p] as const), jsonPatchArb.map((p) => ['json', p] as const)), fc.boolean(), async ([type, patch], status) => {
        const media = type === 'merge' ? 'application/merge-patch+json' : 'application/json-patch+json';
        const r = await send(gw, 'PATCH', `${BASE}/target${status ? '/status' : ''}`, patch, media);
        await judge('patches', r, `PATCH ${type} ${patch.slice(0, 200)}`);
      }),
      FC,
    );
  }, TIMEOUT);

  it('GraphQL documents', async () => {
    await fc.assert(
      fc.asyncProperty(graphqlArb, async (op) => {
        const r = await send(gw, 'POST', '/graphql', JSON.stringify(op));
        if (r.status === 0 || r.status >= 500) throw new Error(`${op.query} → ${r.status} ${r.body.slice(0, 300)}`);
        let result: { data?: Record<string, unknown> | null; errors?: { extensions?: { code?: string } }[] } = {};
        try {
          result = JSON.parse(r.body);
        } catch {
          throw new Error(`${op.query} → ${r.status} not JSON: ${r.body.slice(0, 200)}`);
        }
        if (result.errors?.some((e) => e.extensions?.code === 'INTERNAL')) throw new Error(`${op.query} → INTERNAL ${r.body.slice(0, 300)}`);
        const wrote = /^mutation/.test(op.query) && Object.values(result.data ?? {}).some((v) => v !== null);
        tally('graphql', wrote ? 201 : result.errors?.length ? 400 : 200);
        const now = await snapshot(gw);
        if (!wrote && now !== before) throw new Error(`${op.query} → no write succeeded, but the stored data changed`);
        if (now !== before) await restore();
      }),
      FC,
    );
  }, TIMEOUT);

  it('free-form map keys with `.`, `$`, `%` and empty keys round-trip exactly; a rejected write with them changes nothing', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(awkwardMapArb, awkwardMapArb, async (extraArb, statusArb) => {
        const name = `keys-${n++}`;
        const path = `${BASE}/${name}`;
        // As a JSON body carries them (plain objects, no -0).
        const [extra, status] = [extraArb, statusArb].map((v) => JSON.parse(JSON.stringify(v)) as Record<string, unknown>);
        const spec = { name: 'Ada', age: 36, extra };
        const created = await send(gw, 'POST', BASE, JSON.stringify({ metadata: { name }, spec }));
        tally('map keys', created.status);
        if (created.status !== 201) throw new Error(`POST ${JSON.stringify(spec)} → ${created.status} ${created.body.slice(0, 300)}`);
        try {
          expect(JSON.parse(created.body).spec).toStrictEqual(spec);
          const got = await send(gw, 'GET', path);
          expect(JSON.parse(got.body).spec).toStrictEqual(spec);
          const st = await send(gw, 'PUT', `${path}/status`, JSON.stringify({ ...JSON.parse(got.body), status }));
          expect(st.status, st.body).toBe(200);
          const stored = (await send(gw, 'GET', path)).body;
          expect(JSON.parse(stored).status).toStrictEqual(status);
          expect(JSON.parse(stored).spec).toStrictEqual(spec);
          const listed = JSON.parse((await send(gw, 'GET', `${BASE}?fieldSelector=metadata.name=${name}`)).body).items;
          expect(listed).toStrictEqual([JSON.parse(stored)]);
          // Bad input carrying the same keys: a 4xx, and the object is untouched.
          const version = JSON.parse(stored).metadata.version;
          for (const bad of [
            { metadata: { name, version }, spec: { ...spec, age: -1, extra: { ...extra, '.x': 1 } } },
            { metadata: { name, version: version + 5 }, spec: { name: 'Eve', extra } },
          ]) {
            const r = await send(gw, 'PUT', path, JSON.stringify(bad));
            expect(r.status, r.body).toBeGreaterThanOrEqual(400);
            expect(r.status, r.body).toBeLessThan(500);
            expect((await send(gw, 'GET', path)).body).toBe(stored);
          }
          const patched = await send(gw, 'PATCH', path, JSON.stringify({ spec: { age: 'old', extra } }), 'application/merge-patch+json');
          expect(patched.status).toBe(422);
          expect((await send(gw, 'GET', path)).body).toBe(stored);
        } finally {
          await send(gw, 'DELETE', path);
        }
      }),
      { ...FC, numRuns: Math.max(20, Math.floor(RUNS / 3)) },
    );
  }, TIMEOUT);

  it('the gateway is alive and answers after all of it', async () => {
    expect((await send(gw, 'GET', '/healthz')).status).toBe(200);
    expect((await send(gw, 'GET', `${BASE}/target`)).status).toBe(200);
  });
});
