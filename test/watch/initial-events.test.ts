/**
 * The end of a watch's initial events (docs/API.md §4 "Watch"), and the REST watch parameters
 * `allowWatchBookmarks` and `timeoutSeconds`, on both stores:
 *  - without resourceVersion: ADDED for every match, then one BOOKMARK whose object carries
 *    `k8s.io/initial-events-end: "true"` at the list's position (at once when nothing matches);
 *    GraphQL subscriptions get it as `initialEventsEnd: true`; resuming from it misses nothing;
 *  - with resourceVersion: no such BOOKMARK;
 *  - periodic BOOKMARKs on REST only with allowWatchBookmarks=true (GraphQL: always);
 *  - timeoutSeconds ends the stream cleanly; malformed values are 400.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, call, STORES, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { take, wsClient } from '../graphql/helpers.js';
import { MERGE, openWatch, PERSONS, sleep, write } from './helpers.js';

const END = 'k8s.io/initial-events-end';
const isEnd = (e: any) => e.type === 'BOOKMARK' && e.object?.metadata?.annotations?.[END] === 'true';
const names = (events: any[]) => events.map((e) => (e.type === 'BOOKMARK' ? (isEnd(e) ? 'END' : 'BOOKMARK') : `${e.type} ${e.object.metadata.name}`));
/** names(), the initial ADDED events (in the list's default order, newest first) sorted by name. */
const initial = (events: any[]) => {
  const n = names(events);
  const at = n.indexOf('END');
  return at < 0 ? n : [...n.slice(0, at).sort(), ...n.slice(at)];
};
const person = (name: string, team: string, age = 30) => ({ metadata: { name, labels: { 'people.example.com/team': team } }, spec: { name, age } });

const SUB = /* GraphQL */ `
  subscription ($l: [String!], $f: [String!], $rv: String) {
    peopleExampleCom_v1alpha1_watchPersons(labelSelector: $l, fieldSelector: $f, resourceVersion: $rv) {
      type
      resourceVersion
      initialEventsEnd
      object { metadata { name } }
    }
  }`;

/** Reads an ndjson watch until `pred` holds for the events so far or the stream ends; returns them and whether it ended. */
async function ndjson(gw: TestGateway, query: string, pred: (events: any[]) => boolean = () => false, timeoutMs = 5000) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  const res = await fetch(`${gw.url}${PERSONS}${query}`, { signal: controller.signal, headers: { authorization: adminAuth } });
  const events: any[] = [];
  let ended = false;
  if (res.status !== 200) return { status: res.status, events, ended, body: await res.json() };
  const reader = res.body!.getReader();
  let text = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) {
        ended = true;
        break;
      }
      text += new TextDecoder().decode(value);
      const lines = text.split('\n');
      text = lines.pop()!;
      for (const l of lines) if (l) events.push(JSON.parse(l));
      if (pred(events)) break;
    }
  } catch {
    // aborted at the deadline
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
  return { status: res.status, events, ended, body: undefined };
}

describe.each(STORES)('the end of the initial events (%s)', (kind) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(kind);
    await write(gw, 'POST', PERSONS, person('ie-a', 'red', 20));
    await write(gw, 'POST', PERSONS, person('ie-b', 'red', 40));
    await write(gw, 'POST', PERSONS, person('ie-c', 'blue', 20));
  }, 60_000);
  afterAll(() => gw?.dispose());

  it('REST WebSocket: ADDED for every match, then one BOOKMARK annotated initial-events-end at the list position', async () => {
    const before = await call(gw, 'GET', PERSONS);
    const w = openWatch(gw, '?labelSelector=people.example.com/team=red');
    await w.opened;
    await w.until((ev) => ev.some(isEnd), 'the initial-events-end BOOKMARK');
    await sleep(100);
    expect(initial(w.events)).toEqual(['ADDED ie-a', 'ADDED ie-b', 'END']);
    const end = w.events[2];
    // An object of the model's kind with only the position and the annotation, as Kubernetes sends it.
    expect(end.object).toEqual({
      apiVersion: 'people.example.com/v1alpha1',
      kind: 'Person',
      metadata: { resourceVersion: end.resourceVersion, annotations: { [END]: 'true' } },
    });
    // The position the list was read at: the ADDED events carry the same one.
    expect(end.resourceVersion).toBe(w.events[0].resourceVersion);
    expect(BigInt(end.resourceVersion)).toBeGreaterThanOrEqual(BigInt(before.body.resourceVersion));
    w.close();
  });

  it('REST WebSocket: with no match at all the BOOKMARK comes at once; later changes follow it', async () => {
    const w = openWatch(gw, '?fieldSelector=spec.name=nobody-yet');
    await w.opened;
    await w.until((ev) => ev.length >= 1, 'the first event');
    expect(names(w.events)).toEqual(['END']);
    await write(gw, 'POST', PERSONS, { metadata: { name: 'nobody-yet' }, spec: { name: 'nobody-yet' } });
    await w.until((ev) => ev.length >= 2, 'the ADDED');
    expect(names(w.events)).toEqual(['END', 'ADDED nobody-yet']);
    expect(BigInt(w.events[1].resourceVersion)).toBeGreaterThan(BigInt(w.events[0].resourceVersion));
    w.close();
  });

  it('REST WebSocket: selectors decide the initial events (field and label selectors together)', async () => {
    const w = openWatch(gw, '?labelSelector=people.example.com/team in (red,blue)&fieldSelector=spec.name!=ie-b');
    await w.opened;
    await w.until((ev) => ev.some(isEnd), 'the initial-events-end BOOKMARK');
    expect(initial(w.events)).toEqual(['ADDED ie-a', 'ADDED ie-c', 'END']);
    w.close();
  });

  it('REST WebSocket: a watch resumed from a resourceVersion gets no initial-events-end BOOKMARK', async () => {
    const list = await call(gw, 'GET', PERSONS);
    const w = openWatch(gw, `?resourceVersion=${list.body.resourceVersion}&labelSelector=people.example.com/team=green`);
    await w.opened;
    await write(gw, 'POST', PERSONS, person('ie-green', 'green'));
    await w.until((ev) => ev.length >= 1, 'the ADDED');
    await sleep(100);
    expect(names(w.events)).toEqual(['ADDED ie-green']);
    w.close();
  });

  it('resuming from the BOOKMARK\'s resourceVersion misses nothing', async () => {
    const sel = '?labelSelector=people.example.com/team=purple';
    await write(gw, 'POST', PERSONS, person('ie-p1', 'purple'));
    const first = openWatch(gw, sel);
    await first.opened;
    // Writes race with the initial list: some may land in it, the others follow the BOOKMARK.
    const racing = Promise.all([
      write(gw, 'POST', PERSONS, person('ie-p2', 'purple')),
      write(gw, 'PATCH', `${PERSONS}/ie-p1`, { spec: { age: 31 } }, MERGE),
    ]);
    await first.until((ev) => ev.some(isEnd), 'the BOOKMARK');
    await racing;
    await write(gw, 'POST', PERSONS, person('ie-p3', 'purple'));
    await write(gw, 'PATCH', `${PERSONS}/ie-p2`, { metadata: { labels: { 'people.example.com/team': 'grey' } } }, MERGE);
    await write(gw, 'DELETE', `${PERSONS}/ie-p1`);
    const at = first.events.findIndex(isEnd);
    const end = first.events[at];
    // Applying what the first watcher saw after the BOOKMARK, and separately what a watch resumed
    // from the BOOKMARK sees, to the initial state gives the same final state: the live one.
    const resumed = openWatch(gw, `${sel}&resourceVersion=${end.resourceVersion}`);
    await resumed.opened;
    const live = async () => (await call(gw, 'GET', `${PERSONS}${sel}`)).body.items.map((o: any) => `${o.metadata.name}@${o.metadata.version}`).sort();
    const want = await live();
    expect(want).toEqual(['ie-p3@1']);
    const replay = (events: any[]) => {
      const state = new Map<string, number>();
      for (const e of events) {
        if (e.type === 'ADDED' || e.type === 'MODIFIED') state.set(e.object.metadata.name, e.object.metadata.version);
        if (e.type === 'DELETED') state.delete(e.object.metadata.name);
      }
      return [...state].map(([n, v]) => `${n}@${v}`).sort();
    };
    const listed = first.events.slice(0, at);
    await first.until((ev) => ev.some((e) => e.type === 'DELETED' && e.object.metadata.name === 'ie-p1'), 'the DELETED of ie-p1');
    await resumed.until((ev) => ev.some((e) => e.type === 'DELETED' && e.object.metadata.name === 'ie-p1'), 'the resumed DELETED of ie-p1');
    expect(replay([...listed, ...first.changes().slice(at)])).toEqual(want);
    expect(replay([...listed, ...resumed.changes()])).toEqual(want);
    // Every change after the BOOKMARK reached both, at positions after it.
    for (const e of resumed.changes()) expect(BigInt(e.resourceVersion)).toBeGreaterThan(BigInt(end.resourceVersion));
    const after = (ev: any[]) => ev.filter((e) => e.type !== 'BOOKMARK' && BigInt(e.resourceVersion) > BigInt(end.resourceVersion)).map((e) => `${e.type} ${e.object.metadata.name} ${e.resourceVersion}`);
    // The resumed watch may repeat a change the initial list already showed, never lack one.
    expect(after(resumed.events)).toEqual(expect.arrayContaining(after(first.events.slice(at + 1))));
    first.close();
    resumed.close();
  });

  it('ndjson: the BOOKMARK follows the ADDED lines, and comes first when nothing matches', async () => {
    const some = await ndjson(gw, '?watch=true&labelSelector=people.example.com/team=red', (ev) => ev.some(isEnd));
    expect(initial(some.events)).toEqual(['ADDED ie-a', 'ADDED ie-b', 'END']);
    const none = await ndjson(gw, '?watch=true&labelSelector=people.example.com/team=none', (ev) => ev.length >= 1);
    expect(names(none.events)).toEqual(['END']);
  });

  it('GraphQL: a BOOKMARK with initialEventsEnd: true after the ADDED events (object null), at once when nothing matches', async () => {
    const client = wsClient(gw, undefined, { authorization: adminAuth });
    try {
      const ev = client.iterate({ query: SUB, variables: { l: ['people.example.com/team=red'] } });
      const got = (await take(ev, 3)).map((r) => r.data.peopleExampleCom_v1alpha1_watchPersons);
      expect(got.map((e) => [e.type, e.object?.metadata.name ?? null, e.initialEventsEnd])).toEqual([
        ['ADDED', 'ie-b', false], // newest first, the list's default order
        ['ADDED', 'ie-a', false],
        ['BOOKMARK', null, true],
      ]);
      expect(got[2].resourceVersion).toBe(got[0].resourceVersion);
      await ev.return?.();

      const none = client.iterate({ query: SUB, variables: { f: ['spec.name=graphql-later'] } });
      const [first] = (await take(none, 1)).map((r) => r.data.peopleExampleCom_v1alpha1_watchPersons);
      expect(first).toMatchObject({ type: 'BOOKMARK', object: null, initialEventsEnd: true });
      await write(gw, 'POST', PERSONS, { metadata: { name: 'graphql-later' }, spec: { name: 'graphql-later' } });
      const [added] = (await take(none, 1)).map((r) => r.data.peopleExampleCom_v1alpha1_watchPersons);
      expect(added).toMatchObject({ type: 'ADDED', object: { metadata: { name: 'graphql-later' } }, initialEventsEnd: false });
      await none.return?.();

      // Resumed from the BOOKMARK: no second BOOKMARK of that kind, and the change after it.
      const resumed = client.iterate({ query: SUB, variables: { f: ['spec.name=graphql-later'], rv: first.resourceVersion } });
      const [again] = (await take(resumed, 1)).map((r) => r.data.peopleExampleCom_v1alpha1_watchPersons);
      expect(again).toMatchObject({ type: 'ADDED', object: { metadata: { name: 'graphql-later' } }, initialEventsEnd: false });
      await resumed.return?.();
    } finally {
      await client.dispose();
    }
  });
});

describe('REST watch parameters allowWatchBookmarks and timeoutSeconds', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway('embedded');
    gw.watches.configure({ bookmarkMs: 100 });
  });
  afterAll(() => gw?.dispose());

  it('periodic BOOKMARKs only with allowWatchBookmarks=true; the initial-events-end BOOKMARK always', async () => {
    const quiet = openWatch(gw, '');
    const asked = openWatch(gw, '?allowWatchBookmarks=true');
    const declined = openWatch(gw, '?allowWatchBookmarks=false');
    await Promise.all([quiet.opened, asked.opened, declined.opened]);
    await asked.until((ev) => ev.filter((e) => e.type === 'BOOKMARK' && !isEnd(e)).length >= 2, 'periodic BOOKMARKs');
    await sleep(300);
    for (const w of [quiet, declined]) expect(names(w.events)).toEqual(['END']);
    const periodic = asked.events.filter((e) => e.type === 'BOOKMARK' && !isEnd(e));
    expect(periodic[0].object).toEqual({ apiVersion: 'people.example.com/v1alpha1', kind: 'Person', metadata: { resourceVersion: periodic[0].resourceVersion } });
    for (const w of [quiet, asked, declined]) w.close();
  });

  it('GraphQL subscriptions keep their periodic BOOKMARKs (initialEventsEnd false)', async () => {
    const client = wsClient(gw, undefined, { authorization: adminAuth });
    try {
      const ev = client.iterate({ query: SUB, variables: {} });
      const got = (await take(ev, 3)).map((r) => r.data.peopleExampleCom_v1alpha1_watchPersons);
      expect(got.map((e) => [e.type, e.initialEventsEnd])).toEqual([
        ['BOOKMARK', true],
        ['BOOKMARK', false],
        ['BOOKMARK', false],
      ]);
      await ev.return?.();
    } finally {
      await client.dispose();
    }
  });

  it('timeoutSeconds ends a WebSocket watch with a normal close and no ERROR', async () => {
    const started = Date.now();
    const w = openWatch(gw, '?timeoutSeconds=1');
    await w.opened;
    expect(await w.closed).toBe(1000);
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(900);
    expect(took).toBeLessThan(5000);
    expect(names(w.events)).toEqual(['END']);
  });

  it('timeoutSeconds ends an ndjson watch cleanly; 0 means no timeout', async () => {
    const started = Date.now();
    const r = await ndjson(gw, '?watch=true&timeoutSeconds=1', () => false, 5000);
    expect(r.ended).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(names(r.events)).toEqual(['END']);
    const zero = await ndjson(gw, '?watch=true&timeoutSeconds=0', () => false, 1500);
    expect(zero.ended).toBe(false);
  });

  it.each([
    ['timeoutSeconds=-1', 'timeoutSeconds'],
    ['timeoutSeconds=1.5', 'timeoutSeconds'],
    ['timeoutSeconds=abc', 'timeoutSeconds'],
    ['timeoutSeconds=86401', 'timeoutSeconds'],
    ['timeoutSeconds=1e3', 'timeoutSeconds'],
    ['allowWatchBookmarks=maybe', 'allowWatchBookmarks'],
  ])('%s is a 400 naming the parameter, over ndjson and WebSocket', async (param, name) => {
    const r = await ndjson(gw, `?watch=true&${param}`);
    expect(r.status).toBe(400);
    expect(r.body.detail).toContain(name);
    await expect(openWatch(gw, `?${param}`).opened).rejects.toThrow('HTTP 400');
  });

  it('the largest timeoutSeconds is accepted', async () => {
    const w = openWatch(gw, '?timeoutSeconds=86400');
    await w.opened;
    await w.until((ev) => ev.length >= 1, 'the BOOKMARK');
    w.close();
  });
});
