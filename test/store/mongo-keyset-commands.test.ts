/**
 * What a keyset page asks of MongoDB/FerretDB (docs/API.md §12), counted with the driver's
 * command monitoring (test/helpers/commands.ts) through a real gateway: at any depth, a REST
 * `limit`/`continue` page and a GraphQL connection page send one `find` on the model's
 * collection, with `limit` = page size + 1 and no skip, and no `getMore`, `count` or
 * `aggregate`: the server returns at most limit + 1 documents however deep the page is. A
 * numbered page, for contrast, skips every object before it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { CommandLog, describeCommands, type SeenCommand } from '../helpers/commands.js';
import { auth, pluginsDir, type PluginsDir } from '../plugins/fixtures.js';
import { ITEMS, item, KEYSET_PLUGIN } from '../rest/keyset-fixture.js';
import { gql } from '../graphql/helpers.js';

const COLL = 'ext.keyset.example.com.v1.items';
const N = 200;
const LIMIT = 20;

describe('MongoDB commands per keyset page', () => {
  const log = new CommandLog();
  let dir: PluginsDir;
  let gw: TestGateway;
  const onItems = (c: SeenCommand) => c.coll === COLL;

  beforeAll(async () => {
    dir = await pluginsDir();
    await dir.write('keyset', { 'plugin.yaml': KEYSET_PLUGIN });
    gw = await startTestGateway('mongodb', { pluginsDir: dir.dir, onMongoCommand: log.listener });
    for (let i = 0; i < N; i++) expect((await call(gw, 'POST', ITEMS, item(i), auth)).status).toBe(201);
  }, 300_000);
  afterAll(async () => {
    await gw?.dispose();
    await dir?.remove();
  });

  /** The one find a page sent, checked: limit + 1, no skip, nothing else on the collection. */
  const onePageFind = (cs: SeenCommand[], what: string) => {
    expect(cs.map((c) => c.name), `${what}: ${describeCommands(cs)}`).toEqual(['find']);
    const find = cs[0]!.command;
    expect(Number(find.limit), what).toBe(LIMIT + 1);
    expect(find.skip ?? 0, what).toBe(0);
    return find;
  };

  it('REST: every page of a walk, first to last, is one find of limit + 1 documents and no skip', async () => {
    const q = `sort=spec.rank,desc&labelSelector=app&limit=${LIMIT}`;
    let token = '';
    let pages = 0;
    let seen = 0;
    do {
      let body: any;
      const cs = await log.during(async () => {
        const r = await call(gw, 'GET', `${ITEMS}?${q}${token ? `&continue=${token}` : ''}`, undefined, auth);
        expect(r.status).toBe(200);
        body = r.body;
      }, onItems);
      onePageFind(cs, `page ${pages + 1}`);
      seen += body.items.length;
      token = body.continue;
      pages++;
    } while (token !== '');
    expect(seen).toBe(N);
    expect(pages).toBe(N / LIMIT);

    // A numbered page at the same depth skips every object before it (for contrast).
    const deep = await log.during(() => call(gw, 'GET', `${ITEMS}?sort=spec.rank,desc&labelSelector=app&page=${N / LIMIT}&size=${LIMIT}`, undefined, auth), onItems);
    const find = deep.find((c) => c.name === 'find')!.command;
    expect(Number(find.skip ?? 0) + Number(find.limit ?? 0)).toBeGreaterThanOrEqual(N - LIMIT);
  });

  it('GraphQL: a connection page deep in the list is one find of first + 1 documents; hasPreviousPage, when selected, one more', async () => {
    const field = 'keysetExampleCom_v1_itemsConnection';
    let after: string | null = null;
    for (let n = 0; n < N / LIMIT; n++) {
      let body: any;
      const cs = await log.during(async () => {
        body = (await gql(gw, `query($a: String) { ${field}(first: ${LIMIT}, after: $a, orderBy: [SPEC_TEAM_ASC]) { edges { node { metadata { name } } } pageInfo { endCursor hasNextPage } } }`, { a: after }, { authorization: adminAuth })).body;
      }, onItems);
      // hasPreviousPage is not selected: nothing is read about the side before the cursor
      const finds = cs.filter((c) => c.name === 'find');
      expect(cs.length, describeCommands(cs)).toBe(finds.length);
      onePageFind(finds, `connection page ${n + 1}`);
      expect(finds.every((c) => Number(c.command.limit) <= LIMIT + 1 && !c.command.skip)).toBe(true);
      after = body.data[field].pageInfo.endCursor;
    }
    // Selected after a cursor, hasPreviousPage costs one more find of at most two documents.
    let body: any;
    const cs = await log.during(async () => {
      body = (await gql(gw, `query($a: String) { ${field}(first: ${LIMIT}, after: $a, orderBy: [SPEC_TEAM_ASC]) { edges { node { metadata { name } } } pageInfo { hasPreviousPage } } }`, { a: after }, { authorization: adminAuth })).body;
    }, onItems);
    const finds = cs.filter((c) => c.name === 'find');
    expect(finds, describeCommands(cs)).toHaveLength(2);
    expect(finds.every((c) => !c.command.skip)).toBe(true);
    expect(finds.filter((c) => Number(c.command.limit) <= 2)).toHaveLength(1);
    expect(body.data[field].pageInfo.hasPreviousPage).toBe(true);
  });
});
