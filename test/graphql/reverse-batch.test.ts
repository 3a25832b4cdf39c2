/**
 * Reverse connections are loaded in batches (docs/API.md §13): the first pages one reverse field
 * asks with the same arguments on one level of the result are read together, with a small
 * constant number of store queries however many objects the level has, and each answer is the
 * one the object's own connection gives. Both stores, through the real server, on a plugin of
 * its own: a Book names its lead Author (spec.lead, reverse `led`) and its Authors (the array
 * spec.authors, reverse `books`: a book of two authors is on both pages).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, call, startTestGateway, STORES, type TestGateway } from '../helpers/gateway.js';
import { pluginsDir, waitPhase, type PluginsDir } from '../plugins/fixtures.js';
import { gql as post, take, wsClient } from './helpers.js';

const gql = (gw: TestGateway, query: string, variables?: Record<string, unknown>) => post(gw, query, variables, { authorization: adminAuth });

const PLUGIN = `apiVersion: plugin.svc.run/v1alpha1
kind: Plugin
metadata:
  name: rvb
spec:
  version: 1.0.0
  models:
    - group: rvb.example.com
      version: v1
      kind: Author
      schema:
        properties:
          spec:
            type: object
            properties:
              pen: { type: string }
    - group: rvb.example.com
      version: v1
      kind: Book
      schema:
        properties:
          spec:
            type: object
            properties:
              year: { type: integer }
              lead:
                type: string
                x-svc-ref: { group: rvb.example.com, version: v1, kind: Author, field: leadAuthor, reverse: led }
              authors:
                type: array
                items: { type: string }
                x-svc-ref: { group: rvb.example.com, version: v1, kind: Author, field: authorObjects, reverse: books }
      indexes:
        - name: spec.lead
          path: spec.lead
        - name: spec.authors
          path: spec.authors
        - name: spec.year
          path: spec.year
`;

/** A response limit small enough for a few pages of books to pass it (every query of this file stays far below). */
const RESPONSE_BYTES = 64 * 1024;
const AUTHORS = '/apis/rvb.example.com/v1/authors';
const BOOKS = '/apis/rvb.example.com/v1/books';
const pad = (i: number) => String(i).padStart(2, '0');
const author = (k: number) => `a${pad(k)}`;
/** 12 authors; a00 writes 30 books of 1990 (first ascending by year, last by default order), a01…a11 k % 4 each. */
const AUTHOR_COUNT = 12;
function books(): { name: string; spec: Record<string, unknown> }[] {
  const out: { name: string; spec: Record<string, unknown> }[] = [];
  for (let j = 0; j < 30; j++) out.push({ name: `b00-${pad(j)}`, spec: { year: 1990, lead: author(0), authors: [author(0)] } });
  for (let k = 1; k < AUTHOR_COUNT; k++) {
    for (let j = 0; j < k % 4; j++) out.push({ name: `b${pad(k)}-${j}`, spec: { year: 2000 + ((7 * j + k) % 5), lead: author(k), authors: [author(k)] } });
  }
  // Books of two authors (once with a name repeated), and books that name no author.
  out.push({ name: 'duo-1', spec: { year: 2001, lead: author(1), authors: [author(1), author(2)] } });
  out.push({ name: 'duo-2', spec: { year: 2003, lead: author(4), authors: [author(3), author(4), author(3)] } });
  out.push({ name: 'duo-3', spec: { year: 1990, lead: author(0), authors: [author(4), author(0)] } });
  out.push({ name: 'nobody-1', spec: { year: 2002, lead: 'nobody', authors: ['nobody'] } });
  out.push({ name: 'nobody-2', spec: { year: 2002, authors: [] } });
  return out;
}

const PAGE = 'totalCount edges { cursor node { metadata { name } } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor }';
const ARGS = '$first: Int, $last: Int, $where: RvbExampleComV1BookWhere, $orderBy: [RvbExampleComV1BookOrder!]';
const PASS = 'first: $first, last: $last, where: $where, orderBy: $orderBy';

/** The argument sets compared (all but totalCount are first pages: a cursor reads alone). */
const CASES: Record<string, unknown>[] = [
  { first: 1 },
  { first: 2 },
  { first: 3, orderBy: ['SPEC_YEAR_ASC'] },
  { first: 2, orderBy: ['SPEC_YEAR_DESC', 'METADATA_NAME_DESC'] },
  { first: 2, where: { spec: { year: { gte: 2002 } } }, orderBy: ['SPEC_YEAR_ASC'] },
  { first: 1, orderBy: ['SPEC_AUTHORS_DESC'] },
  { last: 2, orderBy: ['SPEC_YEAR_ASC'] },
  {},
];

describe.each(STORES)('GraphQL reverse connections in batches (%s)', (kind) => {
  let gw: TestGateway;
  let dir: PluginsDir;

  /** Store operations the gateway has run so far, by operation (svc_store_operation_duration_seconds). */
  async function storeOperations(): Promise<Record<string, number>> {
    const text = (await call(gw, 'GET', '/metrics')).body as string;
    const out: Record<string, number> = {};
    for (const line of text.split('\n')) {
      const m = /^svc_store_operation_duration_seconds_count\{.*operation="(\w+)".*\} (\d+)/.exec(line);
      if (m) out[m[1]!] = (out[m[1]!] ?? 0) + Number(m[2]);
    }
    return out;
  }
  /** The store operations one query costs, by operation, and its answer. */
  async function opsOf(query: string) {
    const before = await storeOperations();
    const r = await gql(gw, query);
    expect(r.body.errors, JSON.stringify(r.body.errors)).toBeUndefined();
    const after = await storeOperations();
    const ops = Object.fromEntries(Object.entries(after).map(([op, n]) => [op, n - (before[op] ?? 0)]).filter(([, n]) => n !== 0));
    return { ops: ops as Record<string, number>, data: r.body.data };
  }

  beforeAll(async () => {
    dir = await pluginsDir();
    await dir.write('rvb', { 'plugin.yaml': PLUGIN });
    gw = await startTestGateway(kind, { pluginsDir: dir.dir, limits: { responseBytes: RESPONSE_BYTES } });
    await waitPhase(gw, 'rvb', 'STARTED');
    for (let k = 0; k < AUTHOR_COUNT; k++) {
      expect((await call(gw, 'POST', AUTHORS, { metadata: { name: author(k) }, spec: { pen: `pen ${k}` } }, { authorization: adminAuth })).status).toBe(201);
    }
    for (const b of books()) {
      const r = await call(gw, 'POST', BOOKS, { metadata: { name: b.name }, spec: b.spec }, { authorization: adminAuth });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
    }
  }, 120_000);
  afterAll(async () => {
    await gw?.dispose();
    await dir?.remove();
  });

  const outer = (inner: string) =>
    `{ c: rvbExampleCom_v1_authorsConnection(first: ${AUTHOR_COUNT}, orderBy: [METADATA_NAME_ASC]) { edges { node { metadata { name } ${inner} } } } }`;

  it('a page of 12 authors with books(first: 2) each costs a few store queries more than the page alone, not one per author', async () => {
    const books = 'books(first: 2, orderBy: [METADATA_NAME_ASC])';
    const alone = await opsOf(outer(''));
    const joined = await opsOf(outer(`${books} { edges { node { metadata { name } } } pageInfo { hasNextPage } }`));
    const pages = joined.data.c.edges.map((e: any) => [e.node.metadata.name, e.node.books.edges.map((x: any) => x.node.metadata.name), e.node.books.pageInfo.hasNextPage]);
    expect(pages).toHaveLength(AUTHOR_COUNT);
    expect(pages.slice(0, 5)).toEqual([
      ['a00', ['b00-00', 'b00-01'], true],
      ['a01', ['b01-0', 'duo-1'], false],
      ['a02', ['b02-0', 'b02-1'], true],
      ['a03', ['b03-0', 'b03-1'], true],
      ['a04', ['duo-2', 'duo-3'], false],
    ]);
    expect(pages[8]).toEqual(['a08', [], false]);
    // The relation's reads: one feed position and the keyset reads of all authors together (two
    // here: a00's 30 books fill most of the first read, and the authors it leaves short need a
    // second to know they have no more). One per author would be 12 reads and 12 positions.
    const extra = (ops: Record<string, number>, op: string) => (ops[op] ?? 0) - (alone.ops[op] ?? 0);
    expect(extra(joined.ops, 'page'), JSON.stringify(joined.ops)).toBeGreaterThanOrEqual(1);
    expect(extra(joined.ops, 'page'), JSON.stringify(joined.ops)).toBeLessThanOrEqual(2);
    expect(extra(joined.ops, 'resourceVersion')).toBe(1);
    expect(extra(joined.ops, 'list')).toBe(0);
    // totalCount: known for every author whose books were all read; one count for each of the
    // others (a00, a02, a03, a07 and a11 have more than 2 books).
    const counted = await opsOf(outer(`${books} { totalCount }`));
    expect(counted.data.c.edges.map((e: any) => e.node.books.totalCount)).toEqual([31, 2, 3, 4, 2, 1, 2, 3, 0, 1, 2, 3]);
    expect(extra(counted.ops, 'list')).toBe(5);
    expect(extra(counted.ops, 'page')).toBeLessThanOrEqual(2);
  });

  it.each(CASES)('each author gets the page of its own connection: %j', async (args) => {
    const batched = await gql(gw, `query(${ARGS}) ${outer(`books(${PASS}) { ${PAGE} } led(${PASS}) { ${PAGE} }`)}`, args);
    expect(batched.body.errors, JSON.stringify(batched.body.errors)).toBeUndefined();
    const edges = batched.body.data.c.edges;
    expect(edges).toHaveLength(AUTHOR_COUNT);
    const where = (args.where ?? {}) as { spec?: Record<string, unknown> };
    const own = `query($name: String!, $books: RvbExampleComV1BookWhere, $led: RvbExampleComV1BookWhere, ${ARGS}) {
      one: rvbExampleCom_v1_author(name: $name) { books(${PASS}) { ${PAGE} } led(${PASS}) { ${PAGE} } }
      books: rvbExampleCom_v1_booksConnection(first: $first, last: $last, where: $books, orderBy: $orderBy) { ${PAGE} }
      led: rvbExampleCom_v1_booksConnection(first: $first, last: $last, where: $led, orderBy: $orderBy) { ${PAGE} }
    }`;
    let several = 0;
    for (const [k, edge] of edges.entries()) {
      const name = author(k);
      expect(edge.node.metadata.name).toBe(name);
      const alone = await gql(gw, own, {
        ...args,
        name,
        // The model's own connection filtered by the referring property: the same query, so the
        // same edges, cursors, pageInfo and totalCount.
        books: { ...where, spec: { ...where.spec, authors: { eq: name } } },
        led: { ...where, spec: { ...where.spec, lead: { eq: name } } },
      });
      expect(alone.body.errors, JSON.stringify(alone.body.errors)).toBeUndefined();
      const { one, books: b, led } = alone.body.data;
      expect(edge.node.books, `${name} books`).toEqual(b);
      expect(edge.node.led, `${name} led`).toEqual(led);
      expect(one).toEqual({ books: b, led });
      if (b.edges.length > 1) several++;
    }
    if (args.where === undefined && args.first !== 1) expect(several).toBeGreaterThan(3);
    // A batched endCursor continues that author's own connection.
    const a00 = edges[0].node.books;
    if (a00.pageInfo.hasNextPage && args.last === undefined) {
      const next = await gql(
        gw,
        `query($after: String, ${ARGS}) { a: rvbExampleCom_v1_author(name: "a00") { books(${PASS}, after: $after) { edges { node { metadata { name } } } pageInfo { hasPreviousPage } } } }`,
        { ...args, after: a00.pageInfo.endCursor },
      );
      expect(next.body.errors, JSON.stringify(next.body.errors)).toBeUndefined();
      expect(next.body.data.a.books.pageInfo.hasPreviousPage).toBe(true);
      expect(next.body.data.a.books.edges[0].node.metadata.name).not.toBe(a00.edges.at(-1).node.metadata.name);
    }
  });

  it('an author listed twice in one level is answered twice, and aliases with other arguments are other batches', async () => {
    const r = await gql(
      gw,
      `{ x: rvbExampleCom_v1_author(name: "a03") { books(first: 1, orderBy: [METADATA_NAME_ASC]) { edges { node { metadata { name } } } } }
         y: rvbExampleCom_v1_author(name: "a03") { books(first: 1, orderBy: [METADATA_NAME_ASC]) { edges { node { metadata { name } } } }
           two: books(first: 2, orderBy: [METADATA_NAME_DESC]) { edges { node { metadata { name } } } } } }`,
    );
    expect(r.body.errors).toBeUndefined();
    expect(r.body.data).toEqual({
      x: { books: { edges: [{ node: { metadata: { name: 'b03-0' } } }] } },
      y: { books: { edges: [{ node: { metadata: { name: 'b03-0' } } }] }, two: { edges: [{ node: { metadata: { name: 'duo-2' } } }, { node: { metadata: { name: 'b03-2' } } }] } },
    });
  });

  it('connections and reverse connections spend the one response budget of the operation', async () => {
    const all = await call(gw, 'GET', BOOKS, undefined, { authorization: adminAuth });
    const bytes = Buffer.byteLength(JSON.stringify(all.body.items).slice(1, -1));
    expect(bytes).toBeLessThan(RESPONSE_BYTES / 2);
    const copies = Math.floor(RESPONSE_BYTES / bytes) + 1;
    // Pages of other sizes, each read on its own.
    const aliases = (field: string) => Array.from({ length: copies }, (_, i) => `x${i}: ${field}(first: ${100 - i}) { edges { node { metadata { name } } } }`).join(' ');
    // Each copy fits; together they are over.
    for (const query of [`{ ${aliases('rvbExampleCom_v1_booksConnection')} }`, outer(aliases('books'))]) {
      const r = await gql(gw, query);
      expect(r.status, query).toBe(400);
      expect(r.body.errors?.map((e: any) => e.extensions?.code)).toEqual(['BAD_REQUEST']);
      expect(r.body.errors![0]!.message).toContain(`${RESPONSE_BYTES} bytes (limit: response size)`);
    }
    // The same page asked by every alias is read once, and counted as often as it is answered.
    const same = Array.from({ length: copies }, (_, i) => `x${i}: books(first: 100) { edges { node { metadata { name } } } }`).join(' ');
    const r = await gql(gw, outer(same));
    expect(r.status).toBe(400);
    expect(r.body.errors?.map((e: any) => e.extensions?.code)).toEqual(['BAD_REQUEST']);
    const one = await gql(gw, `{ ${aliases('rvbExampleCom_v1_booksConnection').split(' x1:')[0]} }`);
    expect(one.body.errors).toBeUndefined();
    expect(one.body.data.x0.edges).toHaveLength(all.body.items.length);
  });

  it('reverse connections resolve in subscription events too', async () => {
    const client = wsClient(gw, { authorization: adminAuth });
    try {
      const events = client.iterate({
        query: `subscription { rvbExampleCom_v1_watchAuthors(where: { metadata: { name: { in: ["a03", "a04"] } } }) {
          type object { metadata { name } books(first: 2, orderBy: [METADATA_NAME_DESC]) { totalCount edges { node { metadata { name } } } } } } }`,
      });
      const got = await take(events, 2);
      expect(got.map((e) => e.errors)).toEqual([undefined, undefined]);
      const pages = Object.fromEntries(got.map((e) => [e.data.rvbExampleCom_v1_watchAuthors.object.metadata.name, e.data.rvbExampleCom_v1_watchAuthors.object.books]));
      const page = (total: number, ...names: string[]) => ({ totalCount: total, edges: names.map((name) => ({ node: { metadata: { name } } })) });
      expect(pages).toEqual({ a03: page(4, 'duo-2', 'b03-2'), a04: page(2, 'duo-3', 'duo-2') });
      await events.return?.();
    } finally {
      await client.dispose();
    }
  });

  it("each event of a subscription is an answer of its own: the pages of many events may pass the response limit together", async () => {
    const all = await call(gw, 'GET', `${BOOKS}?fieldSelector=spec.authors=a00`, undefined, { authorization: adminAuth });
    const bytes = Buffer.byteLength(JSON.stringify(all.body.items));
    const events = Math.floor(RESPONSE_BYTES / bytes) + 2;
    const client = wsClient(gw, { authorization: adminAuth });
    try {
      const stream = client.iterate({
        query: `subscription { rvbExampleCom_v1_watchAuthors(where: { metadata: { name: { eq: "a00" } } }) { object { books(first: 100) { edges { node { metadata { name } } } } } } }`,
      });
      // ADDED, then the end of the initial events (no object).
      const got = await take(stream, 2);
      expect(got.map((e) => e.errors)).toEqual([undefined, undefined]);
      for (let i = 1; i < events; i++) {
        expect((await call(gw, 'PATCH', `${AUTHORS}/a00`, { spec: { pen: `pen ${i}` } }, { authorization: adminAuth, 'content-type': 'application/merge-patch+json' })).status).toBe(200);
        got.push(...(await take(stream, 1)));
      }
      expect(got.map((e) => e.errors?.[0]?.message)).toEqual(got.map(() => undefined));
      const pages = got.map((e) => e.data.rvbExampleCom_v1_watchAuthors.object?.books.edges.length);
      expect(pages).toEqual([31, undefined, ...Array.from({ length: events - 1 }, () => 31)]);
      await stream.return?.();
    } finally {
      await client.dispose();
    }
  });
});
