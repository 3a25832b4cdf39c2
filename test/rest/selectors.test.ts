/**
 * Every selector form of docs/API.md §4, over HTTP, on both stores, against a dataset where each
 * answer is known. Field selectors use the crm plugin's indexes (spec.email unique, spec.tags
 * multi-valued).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, STORES, startTestGateway, type TestGateway } from '../helpers/gateway.js';

const CONTACTS = '/apis/crm.example.net/v1/people';
const L = 'crm.example.net';

const data = [
  { name: 'a', labels: { [`${L}/tier`]: 'gold', [`${L}/region`]: 'eu' }, email: 'a@x.io', tags: ['vip', 'new'] },
  { name: 'b', labels: { [`${L}/tier`]: 'silver', [`${L}/region`]: 'us' }, email: 'b@x.io', tags: ['new'] },
  { name: 'c', labels: { [`${L}/tier`]: 'gold' }, email: 'c@x.io', tags: [] },
  { name: 'd', labels: { [`${L}/region`]: 'eu' }, email: 'd,comma@x.io', tags: ['old'] },
  { name: 'e', labels: {}, email: 'e@x.io' },
];

describe.each(STORES)('selectors over REST (%s)', (kind) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(kind);
    for (const d of data) {
      const res = await call(gw, 'POST', CONTACTS, {
        metadata: { name: d.name, labels: d.labels },
        spec: { email: d.email, ...(d.tags ? { tags: d.tags } : {}) },
      });
      expect(res.status).toBe(201);
    }
  });
  afterAll(() => gw?.dispose());

  const cases: [string, string[]][] = [
    [`labelSelector=${L}/tier=gold`, ['a', 'c']],
    [`labelSelector=${L}/tier==gold`, ['a', 'c']],
    [`labelSelector=${L}/tier!=gold`, ['b', 'd', 'e']],
    [`labelSelector=${L}/tier in (gold,silver)`, ['a', 'b', 'c']],
    [`labelSelector=${L}/tier notin (gold)`, ['b', 'd', 'e']],
    [`labelSelector=${L}/tier=(silver,bronze)`, ['b']],
    [`labelSelector=${L}/region`, ['a', 'b', 'd']],
    [`labelSelector=!${L}/region`, ['c', 'e']],
    [`labelSelector=${L}/tier=gold,${L}/region=eu`, ['a']],
    [`labelSelector=${L}/tier=gold&labelSelector=!${L}/region`, ['c']],
    [`labelSelector= ${L}/tier  in ( gold , silver ) , !${L}/region `, ['c']],
    ['fieldSelector=spec.email=b@x.io', ['b']],
    ['fieldSelector=spec.email==b@x.io', ['b']],
    ['fieldSelector=spec.email!=b@x.io', ['a', 'c', 'd', 'e']],
    ['fieldSelector=spec.email=(a@x.io,c@x.io)', ['a', 'c']],
    ['fieldSelector=spec.email in (a@x.io,e@x.io)', ['a', 'e']],
    ['fieldSelector=spec.email notin (a@x.io,e@x.io)', ['b', 'c', 'd']],
    ['fieldSelector=spec.email=d\\,comma@x.io', ['d']],
    ['fieldSelector=spec.tags=new', ['a', 'b']],
    ['fieldSelector=spec.tags!=new', ['c', 'd', 'e']],
    ['fieldSelector=spec.tags', ['a', 'b', 'd']],
    ['fieldSelector=!spec.tags', ['c', 'e']],
    ['fieldSelector=name=c', ['c']],
    ['fieldSelector=metadata.name in (a,b,z)', ['a', 'b']],
    [`fieldSelector=spec.tags=new&labelSelector=${L}/region=us`, ['b']],
  ];

  it.each(cases)('%s', async (query, expected) => {
    const params = new URLSearchParams(query.split('&').map((kv) => kv.split(/=(.*)/s).slice(0, 2) as [string, string]));
    const res = await call(gw, 'GET', `${CONTACTS}?${params}&sort=metadata.name,asc`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.items.map((o: any) => o.metadata.name)).toEqual(expected);
    expect(res.body.total).toBe(expected.length);
  });

  it.each([
    ['labelSelector', `${L}/tier>gold`],
    ['labelSelector', `${L}/tier in (gold`],
    ['labelSelector', `${L}/tier in ()`],
    ['labelSelector', 'bad key!=x'],
    ['fieldSelector', 'spec.company=acme'],
    ['fieldSelector', 'spec.email=a=b'],
  ])('%s=%s is a 400 naming the term', async (param, value) => {
    const res = await call(gw, 'GET', `${CONTACTS}?${new URLSearchParams({ [param]: value })}`);
    expect(res.status).toBe(400);
    expect(res.body.detail).toContain(value.includes('company') ? 'spec.company' : value.slice(0, 10));
  });
});
