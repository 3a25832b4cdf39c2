/**
 * Subscriptions with a typed `where` (docs/API.md §13), both stores, over graphql-ws and over
 * GraphQL-over-SSE: the events are exactly those a connection with the same `where` shows (range
 * operators compare numbers as numbers, `ne` matches objects without the field, arrays match any
 * element), objects entering or leaving the selection arrive as ADDED / DELETED, and bad `where`
 * values get BAD_REQUEST before the subscription opens.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, call, STORES, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { auth, pluginsDir, type PluginsDir } from '../plugins/fixtures.js';
import { ITEMS, item, KEYSET_PLUGIN } from '../rest/keyset-fixture.js';
import { gql, take, wsClient } from './helpers.js';

const TYPE = 'KeysetExampleComV1Item';
const WATCH = 'keysetExampleCom_v1_watchItems';
const SUB = `subscription($where: ${TYPE}Where, $rv: String) {
  e: ${WATCH}(where: $where, resourceVersion: $rv) { type initialEventsEnd object { metadata { name } spec { rank team } } }
}`;
const PAGE = `query($where: ${TYPE}Where) { c: keysetExampleCom_v1_itemsConnection(first: 1000, where: $where) { edges { node { metadata { name } } } } }`;
const patch = { ...auth, 'content-type': 'application/merge-patch+json' };

describe.each(STORES)('GraphQL subscriptions with where (%s)', (kind) => {
  let dir: PluginsDir;
  let gw: TestGateway;
  const listed = async (where: unknown): Promise<string[]> => {
    const r = await gql(gw, PAGE, { where }, { authorization: adminAuth });
    expect(r.body.errors, JSON.stringify(r.body.errors)).toBeUndefined();
    return r.body.data.c.edges.map((e: any) => e.node.metadata.name).sort();
  };
  /** Opens a subscription and collects its initial ADDED events (up to the initialEventsEnd BOOKMARK). */
  const open = async (client: ReturnType<typeof wsClient>, where: unknown) => {
    const sub = client.iterate({ query: SUB, variables: { where } });
    const initial: string[] = [];
    for (;;) {
      const [ev] = await take(sub, 1, 10_000);
      expect(ev?.errors, JSON.stringify(ev)).toBeUndefined();
      const e = ev.data.e;
      if (e.initialEventsEnd) break;
      if (e.type === 'ADDED') initial.push(e.object.metadata.name);
    }
    return { sub, initial: initial.sort() };
  };
  /** The next `n` non-BOOKMARK events as [type, name]. */
  const next = async (sub: AsyncIterator<unknown>, n: number) => {
    const out: [string, string][] = [];
    while (out.length < n) {
      const [ev] = await take(sub, 1, 10_000);
      if (ev.data.e.type !== 'BOOKMARK') out.push([ev.data.e.type, ev.data.e.object.metadata.name]);
    }
    return out;
  };

  beforeAll(async () => {
    dir = await pluginsDir();
    await dir.write('keyset', { 'plugin.yaml': KEYSET_PLUGIN });
    gw = await startTestGateway(kind, { pluginsDir: dir.dir });
    for (let i = 0; i < 20; i++) expect((await call(gw, 'POST', ITEMS, item(i), auth)).status).toBe(201);
  }, 120_000);
  afterAll(async () => {
    await gw?.dispose();
    await dir?.remove();
  });

  it('gte on a number: the initial events are the list with the same where; entering and leaving objects are ADDED and DELETED', async () => {
    const where = { spec: { rank: { gte: 7 } } };
    const expected = await listed(where);
    // 7, 10 and 100 match; "100" < "7" as text, so a text comparison would differ.
    expect(expected.length).toBeGreaterThan(3);
    const client = wsClient(gw, { authorization: adminAuth });
    try {
      const { sub, initial } = await open(client, where);
      expect(initial).toEqual(expected);
      const [a, b] = [`sw-a-${kind}`, `sw-b-${kind}`];
      expect((await call(gw, 'POST', ITEMS, { metadata: { name: a }, spec: { rank: 50 } }, auth)).status).toBe(201);
      expect((await call(gw, 'POST', ITEMS, { metadata: { name: b }, spec: { rank: 5 } }, auth)).status).toBe(201); // not selected
      expect((await call(gw, 'PATCH', `${ITEMS}/${b}`, { spec: { rank: 8 } }, patch)).status).toBe(200); // enters
      expect((await call(gw, 'PATCH', `${ITEMS}/${a}`, { spec: { rank: 1 } }, patch)).status).toBe(200); // leaves
      expect((await call(gw, 'PATCH', `${ITEMS}/${a}`, { spec: { rank: 2 } }, patch)).status).toBe(200); // still out: nothing
      expect((await call(gw, 'PATCH', `${ITEMS}/${b}`, { spec: { team: 'z' } }, patch)).status).toBe(200); // stays in
      expect((await call(gw, 'DELETE', `${ITEMS}/${b}`, undefined, auth)).status).toBe(200);
      expect(await next(sub, 4)).toEqual([
        ['ADDED', a],
        ['ADDED', b],
        ['DELETED', a],
        ['MODIFIED', b],
      ]);
      expect(await next(sub, 1)).toEqual([['DELETED', b]]);
      expect((await call(gw, 'DELETE', `${ITEMS}/${a}`, undefined, auth)).status).toBe(200);
      await sub.return?.();
    } finally {
      await client.dispose();
    }
  });

  it('ne matches objects without the field, arrays match any element, and labels combine, as in the list', async () => {
    const client = wsClient(gw, { authorization: adminAuth });
    try {
      for (const where of [
        { spec: { team: { ne: 'a' } } },
        { spec: { tags: { in: ['t1'] } }, metadata: { labels: { matchLabels: { app: 'web' } } } },
        { spec: { rank: { lt: 7, gt: -2 }, team: { notIn: ['b'] } } },
      ]) {
        const expected = await listed(where);
        const { sub, initial } = await open(client, where);
        expect(initial, JSON.stringify(where)).toEqual(expected);
        await sub.return?.();
      }
      const { sub } = await open(client, { spec: { team: { ne: 'a' } } });
      const name = `sw-noteam-${kind}`;
      expect((await call(gw, 'POST', ITEMS, { metadata: { name }, spec: { rank: 1 } }, auth)).status).toBe(201);
      expect(await next(sub, 1)).toEqual([['ADDED', name]]);
      expect((await call(gw, 'PATCH', `${ITEMS}/${name}`, { spec: { team: 'a' } }, patch)).status).toBe(200);
      expect(await next(sub, 1)).toEqual([['DELETED', name]]);
      await sub.return?.();
    } finally {
      await client.dispose();
    }
  });

  it('bad where values get BAD_REQUEST before the subscription opens', async () => {
    const client = wsClient(gw, { authorization: adminAuth });
    try {
      const bad = [
        { metadata: { labels: { matchLabels: { 'bad key!': 'x' } } } },
        { metadata: { labels: { matchExpressions: [{ key: 'app', operator: 'In', values: [] }] } } },
        { metadata: { labels: { matchLabels: { app: 3 } } } },
        { spec: { team: { in: Array.from({ length: 3000 }, (_, i) => `value-${i}`) } } },
      ];
      for (const where of bad) {
        const results = await take(client.iterate({ query: SUB, variables: { where } }), 5, 5000);
        expect(results, JSON.stringify(where).slice(0, 200)).toHaveLength(1);
        expect(results[0].errors.map((e: any) => e.extensions?.code)).toEqual(['BAD_REQUEST']);
        expect(JSON.stringify(results[0])).not.toMatch(/\bat .*\.(ts|js):\d+/);
      }
      // An unindexed path is not in the input type: refused by validation.
      const [refused] = await take(client.iterate({ query: SUB, variables: { where: { spec: { note: { eq: 'x' } } } } }), 5, 5000);
      expect(refused.data ?? null).toBeNull();
      expect(refused.errors[0].message).toMatch(/"note" is not defined/);
    } finally {
      await client.dispose();
    }
  });

  it('over GraphQL-over-SSE the same where selects the same objects', async () => {
    const where = { spec: { rank: { gte: 7 } } };
    const expected = await listed(where);
    const ctl = new AbortController();
    const res = await fetch(`${gw.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: adminAuth },
      body: JSON.stringify({ query: SUB, variables: { where } }),
      signal: ctl.signal,
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    let text = '';
    const names: string[] = [];
    try {
      while (!/"initialEventsEnd":true/.test(text)) {
        const chunk = await reader.read();
        if (chunk.done) break;
        text += new TextDecoder().decode(chunk.value);
      }
      for (const m of text.matchAll(/^data: (.*)$/gm)) {
        const e = JSON.parse(m[1]!).data?.e;
        if (e?.type === 'ADDED') names.push(e.object.metadata.name);
      }
    } finally {
      ctl.abort();
    }
    expect(names.sort()).toEqual(expected);
  });
});
