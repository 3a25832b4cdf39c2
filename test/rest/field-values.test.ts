/**
 * Field selector values take what people type (docs/API.md §4), on both stores, through REST
 * (list, WebSocket watch) and GraphQL (list, subscription): `spec.name=Ada Lovelace` selects by a
 * value with a space, `\,` puts a comma in a value, and escapeSelectorValue writes any value.
 * The indexed string field is the people plugin's Person `spec.name`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { escapeSelectorValue } from '../../src/query/escape.js';
import { take, gql, wsClient } from '../graphql/helpers.js';
import { adminAuth, call, STORES, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { openWatch, PERSONS, write } from '../watch/helpers.js';

const PEOPLE = ['Ada Lovelace', 'Ada', 'Lovelace', 'Lovelace, Ada', 'Grace  Hopper', 'x=(y)!'];
const nameOf = (person: string) => `fv-${PEOPLE.indexOf(person)}`;

const LIST = /* GraphQL */ `
  query ($f: [String!]) {
    peopleExampleCom_v1alpha1_persons(fieldSelector: $f) { items { metadata { name } spec { name } } }
  }`;
const SUB = /* GraphQL */ `
  subscription ($f: [String!]) {
    peopleExampleCom_v1alpha1_watchPersons(fieldSelector: $f) { type initialEventsEnd object { spec { name } } }
  }`;

describe.each(STORES)('field selector values as typed (%s)', (kind) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(kind);
    for (const p of PEOPLE) await write(gw, 'POST', PERSONS, { metadata: { name: nameOf(p) }, spec: { name: p } });
  }, 60_000);
  afterAll(() => gw?.dispose());

  const rest = async (selector: string) => {
    const r = await call(gw, 'GET', `${PERSONS}?fieldSelector=${encodeURIComponent(selector)}`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body.items.map((o: any) => o.spec.name).sort();
  };
  const graphql = async (selector: string) => {
    const r = await gql(gw, LIST, { f: [selector] }, { authorization: adminAuth });
    expect(r.body.errors).toBeUndefined();
    return r.body.data.peopleExampleCom_v1alpha1_persons.items.map((o: any) => o.spec.name).sort();
  };

  it.each([
    ['spec.name=Ada Lovelace', ['Ada Lovelace']],
    ['spec.name==Ada Lovelace', ['Ada Lovelace']],
    [' spec.name = Ada Lovelace ', ['Ada Lovelace']],
    ['spec.name=Grace  Hopper', ['Grace  Hopper']],
    ['spec.name=Lovelace\\, Ada', ['Lovelace, Ada']],
    ['spec.name=Lovelace\\, Ada,name=fv-3', ['Lovelace, Ada']],
    ['spec.name=Ada Lovelace,name=fv-1', []],
    ['spec.name in (Ada\\ Lovelace, Ada)', ['Ada', 'Ada Lovelace']],
    ['spec.name!=Ada Lovelace,spec.name!=Lovelace\\, Ada,spec.name!=Grace  Hopper,spec.name!=x\\=\\(y\\)\\!', ['Ada', 'Lovelace']],
  ])('REST and GraphQL lists: %s', async (selector, want) => {
    expect(await rest(selector)).toEqual(want);
    expect(await graphql(selector)).toEqual(want);
  });

  it('escapeSelectorValue selects each stored value exactly', async () => {
    for (const p of PEOPLE) {
      expect(await rest(`spec.name=${escapeSelectorValue(p)}`)).toEqual([p]);
      expect(await graphql(`spec.name=${escapeSelectorValue(p)}`)).toEqual([p]);
    }
  });

  it('a value with a reserved character left unescaped is a 400 / BAD_REQUEST naming the term', async () => {
    const r = await call(gw, 'GET', `${PERSONS}?fieldSelector=${encodeURIComponent('spec.name=Ada (Countess)')}`);
    expect(r.status).toBe(400);
    expect(r.body.detail).toContain('"spec.name=Ada (Countess)"');
    const g = await gql(gw, LIST, { f: ['spec.name=Ada (Countess)'] }, { authorization: adminAuth });
    expect(g.body.errors?.[0]?.extensions?.code).toBe('BAD_REQUEST');
  });

  it('watches take the same values: REST WebSocket and GraphQL subscription', async () => {
    const w = openWatch(gw, `?fieldSelector=${encodeURIComponent('spec.name=Ada Lovelace')}`);
    await w.opened;
    await w.until((ev) => ev.length >= 2, 'ADDED and the BOOKMARK');
    expect(w.events.map((e) => e.object.spec?.name ?? e.type)).toEqual(['Ada Lovelace', 'BOOKMARK']);
    w.close();
    const client = wsClient(gw, undefined, { authorization: adminAuth });
    try {
      const sub = client.iterate({ query: SUB, variables: { f: ['spec.name=Lovelace\\, Ada'] } });
      const got = (await take(sub, 2)).map((r) => r.data.peopleExampleCom_v1alpha1_watchPersons);
      expect(got.map((e) => [e.type, e.object?.spec.name ?? null])).toEqual([
        ['ADDED', 'Lovelace, Ada'],
        ['BOOKMARK', null],
      ]);
      await sub.return?.();
    } finally {
      await client.dispose();
    }
  });
});
