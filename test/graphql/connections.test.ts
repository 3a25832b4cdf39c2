/**
 * GraphQL connections with typed filters and orders (docs/API.md §13), both stores: forward and
 * backward walks equal the REST page-mode list of the same query, pageInfo follows the Relay
 * specification, totalCount counts every match, `where` filters as its REST selectors do (range
 * operators numerically on numeric indexes), bad arguments and foreign or altered cursors get
 * BAD_REQUEST before any store read, and a watch from a page's resourceVersion misses nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, call, STORES, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { auth, pluginsDir, type PluginsDir } from '../plugins/fixtures.js';
import { ITEMS, item, KEYSET_PLUGIN } from '../rest/keyset-fixture.js';
import { codes, gql, take, wsClient } from './helpers.js';

const FIELD = 'keysetExampleCom_v1_itemsConnection';
const TYPE = 'KeysetExampleComV1Item';
const PAGE = `query Page($first: Int, $after: String, $last: Int, $before: String, $where: ${TYPE}Where, $orderBy: [${TYPE}Order!]) {
  c: ${FIELD}(first: $first, after: $after, last: $last, before: $before, where: $where, orderBy: $orderBy) {
    edges { cursor node { metadata { name } spec { rank team tags } } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
    resourceVersion
  }
}`;

/** The same query typed (GraphQL) and as REST parameters. */
const CASES: { where?: unknown; orderBy?: string[]; rest: string }[] = [
  { rest: '' },
  { orderBy: ['SPEC_RANK_DESC'], rest: 'sort=spec.rank,desc' },
  { where: { metadata: { labels: { matchLabels: { app: 'web' } } } }, orderBy: ['SPEC_RANK_ASC'], rest: 'labelSelector=app=web&sort=spec.rank,asc' },
  { where: { spec: { team: { ne: 'a' } } }, orderBy: ['SPEC_TEAM_DESC'], rest: 'fieldSelector=spec.team!=a&sort=spec.team,desc' },
  { orderBy: ['SPEC_TEAM_ASC', 'SPEC_RANK_DESC'], rest: 'sort=spec.team,asc&sort=spec.rank,desc' },
  {
    where: { spec: { tags: { in: ['t1'] } }, metadata: { labels: { matchExpressions: [{ key: 'app', operator: 'Exists' }] } } },
    orderBy: ['METADATA_CREATION_TIMESTAMP_ASC'],
    rest: 'labelSelector=app&fieldSelector=spec.tags=t1&sort=metadata.creationTimestamp,asc',
  },
  { orderBy: ['METADATA_NAME_DESC'], rest: 'sort=metadata.name,desc' },
];

describe.each(STORES)('GraphQL connections (%s)', (kind) => {
  let dir: PluginsDir;
  let gw: TestGateway;
  const rest = async (q: string) => {
    const r = await call(gw, 'GET', `${ITEMS}?${q}${q ? '&' : ''}page=1&size=100`, undefined, auth);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body;
  };
  const page = async (vars: Record<string, unknown>) => {
    const r = await gql(gw, PAGE, vars, { authorization: adminAuth });
    expect(r.body.errors, JSON.stringify(r.body.errors)).toBeUndefined();
    return r.body.data.c;
  };
  const names = (c: any): string[] => c.edges.map((e: any) => e.node.metadata.name);
  /** Store page reads so far (svc_store_operation_duration_seconds, operation "page"). */
  const pageReads = async () => {
    const text = (await call(gw, 'GET', '/metrics', undefined, auth)).body as string;
    const m = /svc_store_operation_duration_seconds_count\{[^}]*operation="page"[^}]*\} (\d+)/.exec(text);
    return m ? Number(m[1]) : 0;
  };

  beforeAll(async () => {
    dir = await pluginsDir();
    await dir.write('keyset', { 'plugin.yaml': KEYSET_PLUGIN });
    gw = await startTestGateway(kind, { pluginsDir: dir.dir });
    for (let i = 0; i < 45; i++) expect((await call(gw, 'POST', ITEMS, item(i), auth)).status).toBe(201);
  }, 120_000);
  afterAll(async () => {
    await gw?.dispose();
    await dir?.remove();
  });

  it('forward and backward walks equal the page-mode list of the same query', async () => {
    for (const c of CASES) {
      const want = (await rest(c.rest)).items.map((o: any) => o.metadata.name);
      const base = { where: c.where, orderBy: c.orderBy };
      // forward: first/after
      const forward: string[] = [];
      let after: string | undefined;
      for (let n = 0; n < 50; n++) {
        const p = await page({ ...base, first: 7, after });
        forward.push(...names(p));
        expect(p.pageInfo.hasPreviousPage, c.rest).toBe(after !== undefined);
        if (!p.pageInfo.hasNextPage) break;
        after = p.pageInfo.endCursor;
      }
      expect(forward, `forward ${c.rest}`).toEqual(want);
      // backward: last/before, from the end
      const backward: string[] = [];
      let before: string | undefined;
      for (let n = 0; n < 50; n++) {
        const p = await page({ ...base, last: 6, before });
        backward.unshift(...names(p));
        if (!p.pageInfo.hasPreviousPage) break;
        before = p.pageInfo.startCursor;
      }
      expect(backward, `backward ${c.rest}`).toEqual(want);
    }
  });

  it('first defaults to 20; pageInfo and cursors follow the Relay specification; totalCount counts every match', async () => {
    const all = (await rest('')).items.map((o: any) => o.metadata.name);
    const first = await page({});
    expect(names(first)).toEqual(all.slice(0, 20));
    expect(first.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: false });
    expect(first.pageInfo.startCursor).toBe(first.edges[0].cursor);
    expect(first.pageInfo.endCursor).toBe(first.edges.at(-1).cursor);
    // after the 10th edge, before the 30th
    const mid = await page({ first: 5, after: first.edges[9].cursor });
    expect(names(mid)).toEqual(all.slice(10, 15));
    expect(mid.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: true });
    // the cursor's own object counts as a previous (or next) edge: after the very first, before the very last
    expect((await page({ first: 2, after: first.edges[0].cursor })).pageInfo).toMatchObject({ hasPreviousPage: true, hasNextPage: true });
    const lastEdge = (await page({ last: 1 })).edges[0];
    expect(lastEdge.node.metadata.name).toBe(all.at(-1));
    expect((await page({ last: 2, before: lastEdge.cursor })).pageInfo).toMatchObject({ hasPreviousPage: true, hasNextPage: true });
    const second = await page({ first: 20, after: first.pageInfo.endCursor });
    const back = await page({ last: 3, before: second.edges[9].cursor });
    expect(names(back)).toEqual(all.slice(26, 29));
    expect(back.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: true });
    const end = await page({ first: 1000, after: second.pageInfo.endCursor });
    expect(names(end)).toEqual(all.slice(40));
    expect(end.pageInfo.hasNextPage).toBe(false);
    const none = await page({ where: { spec: { team: { eq: 'nobody' } } } });
    expect(none).toMatchObject({ edges: [], pageInfo: { hasNextPage: false, hasPreviousPage: false, startCursor: null, endCursor: null } });
    expect(typeof none.resourceVersion).toBe('string');

    const count = async (where?: unknown) =>
      (await gql(gw, `query($w: ${TYPE}Where) { ${FIELD}(first: 1, where: $w) { totalCount } }`, { w: where }, { authorization: adminAuth })).body.data[FIELD].totalCount;
    expect(await count()).toBe(45);
    expect(await count({ metadata: { labels: { matchLabels: { app: 'web' } } } })).toBe((await rest('labelSelector=app=web')).total);
    // in a fragment too
    const viaFragment = await gql(gw, `{ ${FIELD}(first: 1) { ...C } } fragment C on ${TYPE}Connection { totalCount }`, undefined, { authorization: adminAuth });
    expect(viaFragment.body.data[FIELD].totalCount).toBe(45);
  });

  it('where: scalar operators, numbers as numbers, ne/notIn match absent fields, arrays match any element, labels as a LabelSelector', async () => {
    const data = Array.from({ length: 45 }, (_, i) => item(i));
    const expectWhere = async (where: unknown, pred: (o: ReturnType<typeof item>) => boolean) => {
      const want = data.filter(pred).map((o) => o.metadata.name).sort();
      const got = names(await page({ where, orderBy: ['METADATA_NAME_ASC'], first: 1000 }));
      expect(got, JSON.stringify(where)).toEqual(want);
    };
    const rank = (o: any) => o.spec.rank as number | undefined;
    const team = (o: any) => o.spec.team as string | undefined;
    const tags = (o: any) => (o.spec.tags ?? []) as string[];
    await expectWhere({ spec: { rank: { gte: 3, lt: 100 } } }, (o) => rank(o) !== undefined && rank(o)! >= 3 && rank(o)! < 100);
    await expectWhere({ spec: { rank: { gt: 9 } } }, (o) => rank(o) !== undefined && rank(o)! > 9); // 10 and 100: numbers, not text
    await expectWhere({ spec: { rank: { lte: -2 } } }, (o) => rank(o) === -2);
    await expectWhere({ spec: { rank: { eq: 7 } } }, (o) => rank(o) === 7);
    await expectWhere({ spec: { rank: { in: [3, 100] } } }, (o) => rank(o) === 3 || rank(o) === 100);
    await expectWhere({ spec: { rank: { notIn: [3, 100] } } }, (o) => rank(o) !== 3 && rank(o) !== 100);
    await expectWhere({ spec: { rank: { exists: false } } }, (o) => rank(o) === undefined);
    await expectWhere({ spec: { team: { ne: 'b' } } }, (o) => team(o) !== 'b');
    await expectWhere({ spec: { team: { gt: 'a' } } }, (o) => team(o) !== undefined && team(o)! > 'a');
    await expectWhere({ spec: { tags: { lte: 't0' } } }, (o) => tags(o).some((t) => t <= 't0'));
    await expectWhere({ spec: { tags: { in: ['t3'] }, team: { exists: true } } }, (o) => tags(o).includes('t3') && team(o) !== undefined);
    await expectWhere({ metadata: { name: { gte: 'i-40' } } }, (o) => o.metadata.name >= 'i-40');
    await expectWhere(
      { metadata: { labels: { matchExpressions: [{ key: 'app', operator: 'NotIn', values: ['web'] }, { key: 'zone', operator: 'DoesNotExist' }] } } },
      (o) => o.metadata.labels.app !== 'web',
    );
    // a path that is not indexed is not in the input type
    const unindexed = await gql(gw, `{ ${FIELD}(where: {spec: {note: {eq: "x"}}}) { totalCount } }`, undefined, { authorization: adminAuth });
    expect(unindexed.body.data).toBeUndefined();
    expect(unindexed.body.errors?.[0]?.message).toMatch(/note/);
  });

  it('bad first/last, mixed directions, foreign or altered cursors get BAD_REQUEST before any store read', async () => {
    const first = await page({ first: 3, orderBy: ['SPEC_RANK_DESC'] });
    const cursor: string = first.pageInfo.endCursor;
    const restToken: string = (await call(gw, 'GET', `${ITEMS}?limit=3`, undefined, auth)).body.continue;
    const [key, digest] = JSON.parse(Buffer.from(cursor, 'base64url').toString());
    const altered = Buffer.from(JSON.stringify([[key[0] === 10 ? 7 : 10, ...key.slice(1)], digest])).toString('base64url');
    const bad: Record<string, unknown>[] = [
      { first: 0 },
      { first: 1001 },
      { first: -1 },
      { last: 0 },
      { last: 1001 },
      { first: 2, last: 2 },
      { first: 2, before: cursor, orderBy: ['SPEC_RANK_DESC'] },
      { last: 2, after: cursor, orderBy: ['SPEC_RANK_DESC'] },
      { first: 2, after: 'garbage' },
      { first: 2, after: '' },
      { first: 2, after: cursor }, // another orderBy (the default)
      { first: 2, after: cursor, orderBy: ['SPEC_RANK_ASC'] },
      { first: 2, after: cursor, orderBy: ['SPEC_RANK_DESC'], where: { spec: { team: { eq: 'a' } } } },
      { first: 2, after: altered, orderBy: ['SPEC_RANK_DESC'] },
      { first: 2, after: restToken, orderBy: ['SPEC_RANK_DESC'] },
      { last: 2, before: 'x'.repeat(10_000) },
      { where: { metadata: { labels: { matchLabels: { 'bad key!': 'x' } } } } },
      { where: { metadata: { labels: { matchExpressions: [{ key: 'app', operator: 'In', values: [] }] } } } },
      { orderBy: ['SPEC_RANK_DESC', 'SPEC_RANK_ASC'] },
      // the bounds of REST selectors: 64 terms, 4,096 characters
      { where: { metadata: { labels: { matchExpressions: Array.from({ length: 65 }, (_, i) => ({ key: `k${i}`, operator: 'Exists' })) } } } },
      { where: { spec: { team: { in: Array.from({ length: 20_000 }, (_, i) => `team-${i}`) } } } },
    ];
    const reads = await pageReads();
    for (const vars of bad) {
      const r = await gql(gw, PAGE, vars, { authorization: adminAuth });
      expect(codes(r), JSON.stringify(vars).slice(0, 300)).toEqual(['BAD_REQUEST']);
      expect(r.body.data?.c ?? null).toBeNull();
    }
    expect(await pageReads(), 'no store page was read').toBe(reads);
    // and the good cursor still works with its own query
    expect(names(await page({ first: 2, after: cursor, orderBy: ['SPEC_RANK_DESC'] }))).toHaveLength(2);
    expect(await pageReads()).toBeGreaterThan(reads);
  });

  it('a subscription from a connection page\'s resourceVersion misses nothing and sees nothing twice', async () => {
    const p = await page({ first: 5, where: { metadata: { labels: { matchLabels: { app: 'web' } } } } });
    const name = `gql-late-${kind}`;
    expect((await call(gw, 'POST', ITEMS, { metadata: { name, labels: { app: 'web' } }, spec: { rank: 5 } }, auth)).status).toBe(201);
    const target = p.edges[0].node.metadata.name;
    expect((await call(gw, 'PATCH', `${ITEMS}/${target}`, { spec: { note: 'x' } }, { ...auth, 'content-type': 'application/merge-patch+json' })).status).toBe(200);
    const client = wsClient(gw, { authorization: adminAuth });
    try {
      const sub = client.iterate({
        query: `subscription($rv: String) { keysetExampleCom_v1_watchItems(labelSelector: "app=web", resourceVersion: $rv) { type object { metadata { name } } } }`,
        variables: { rv: p.resourceVersion },
      });
      const first = take(sub, 2, 10_000);
      const events = await first;
      expect(events.map((e: any) => [e.data.keysetExampleCom_v1_watchItems.type, e.data.keysetExampleCom_v1_watchItems.object.metadata.name])).toEqual([
        ['ADDED', name],
        ['MODIFIED', target],
      ]);
      expect((await call(gw, 'DELETE', `${ITEMS}/${name}`, undefined, auth)).status).toBe(200);
      const more = await take(sub, 1, 10_000);
      expect(more.map((e: any) => e.data.keysetExampleCom_v1_watchItems.type)).toEqual(['DELETED']);
      await sub.return?.();
    } finally {
      await client.dispose();
    }
  });
});
