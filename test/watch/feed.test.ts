/**
 * Watch over the durable change feed (issue 10), end to end through real gateways: REST
 * WebSocket watchers, graphql-ws subscriptions, a second gateway in its own process on the same
 * database, restarts, selector transitions on replay, BOOKMARK, authorization re-checks,
 * slow consumers, malformed upgrades and model retirement.
 */
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Attributes, Authorizer } from '../../src/identity/authorizer.js';
import { allowAll } from '../../src/identity/authorizer.js';
import { adminAuth, call, startTestGateway, STORES, type TestGateway } from '../helpers/gateway.js';
import { take, wsClient } from '../graphql/helpers.js';
import { MERGE, openWatch, person, PERSONS, sleep, startGatewayProcess, write, type Watcher } from './helpers.js';

const LABEL = 'people.example.com/t';
const key = (e: any) => `${e.object.metadata.name}@${e.object.metadata.version}`;

/** Folds a watch stream (initial ADDED + changes) into the state a client would hold. */
function fold(events: any[]): Map<string, number> {
  const state = new Map<string, number>();
  for (const e of events) {
    if (e.type === 'ADDED' || e.type === 'MODIFIED') state.set(e.object.metadata.name, e.object.metadata.version);
    else if (e.type === 'DELETED') state.delete(e.object.metadata.name);
  }
  return state;
}

describe.each(STORES)('watch over the durable feed (%s)', (kind) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(kind);
  });
  afterAll(() => gw?.dispose());
  afterEach(() => gw?.watches.configure());

  it('list then watch under concurrent writes: every change once, no gap, final state equals the store', async () => {
    const prefix = `lw-${kind}`;
    for (let i = 0; i < 10; i++) await write(gw, 'POST', PERSONS, person(`${prefix}-${i}`, { [LABEL]: 'lw' }));
    let writing = true;
    const writer = (async () => {
      let i = 10;
      while (writing) {
        const n = i++;
        await write(gw, 'POST', PERSONS, person(`${prefix}-${n}`, { [LABEL]: 'lw' }));
        await write(gw, 'PATCH', `${PERSONS}/${prefix}-${n % 7}`, { spec: { age: n % 100 } }, MERGE);
        if (n % 3 === 0) await write(gw, 'DELETE', `${PERSONS}/${prefix}-${n - 1}`);
      }
    })();
    await sleep(150);
    const w = openWatch(gw, `?labelSelector=${LABEL}=lw`);
    await w.opened;
    await sleep(400);
    writing = false;
    await writer;
    const list = await call(gw, 'GET', `${PERSONS}?labelSelector=${LABEL}=lw`, undefined, { authorization: adminAuth });
    const want = new Map<string, number>(list.body.items.map((o: any) => [o.metadata.name, o.metadata.version]));
    await w.until((ev) => {
      const s = fold(ev);
      return s.size === want.size && [...want].every(([n, v]) => s.get(n) === v);
    }, 'the watched state to equal the stored state');
    // no (name, version) announced twice as present
    const present = w.changes().filter((e) => e.type !== 'DELETED').map(key);
    expect(new Set(present).size).toBe(present.length);
    // positions never go backwards after the initial list
    const rvs = w.changes().slice(10).map((e) => BigInt(e.resourceVersion));
    for (let i = 1; i < rvs.length; i++) expect(rvs[i]! >= rvs[i - 1]!).toBe(true);
    w.close();
  });

  it('selector transitions are replayed on resume: leaving is DELETED, entering is ADDED', async () => {
    await write(gw, 'POST', PERSONS, person(`tr-a-${kind}`, { [LABEL]: 'tr' }));
    await write(gw, 'POST', PERSONS, person(`tr-b-${kind}`, { [LABEL]: 'other' }));
    const { body } = await call(gw, 'GET', `${PERSONS}?labelSelector=${LABEL}=tr`, undefined, { authorization: adminAuth });
    expect(body.items.map((o: any) => o.metadata.name)).toEqual([`tr-a-${kind}`]);
    // while the client is away: a leaves the selection, b enters it, b changes, a comes back
    await write(gw, 'PATCH', `${PERSONS}/tr-a-${kind}`, { metadata: { labels: { [LABEL]: 'gone' } } }, MERGE);
    await write(gw, 'PATCH', `${PERSONS}/tr-b-${kind}`, { metadata: { labels: { [LABEL]: 'tr' } } }, MERGE);
    await write(gw, 'PATCH', `${PERSONS}/tr-b-${kind}`, { spec: { age: 44 } }, MERGE);
    await write(gw, 'PATCH', `${PERSONS}/tr-a-${kind}`, { spec: { age: 50 } }, MERGE); // not selected: silent
    const w = openWatch(gw, `?labelSelector=${LABEL}=tr&resourceVersion=${body.resourceVersion}`);
    await w.opened;
    await w.until((ev) => ev.length >= 3, '3 replayed events');
    await sleep(100);
    expect(w.changes().map((e) => [e.type, e.object.metadata.name])).toEqual([
      ['DELETED', `tr-a-${kind}`],
      ['ADDED', `tr-b-${kind}`],
      ['MODIFIED', `tr-b-${kind}`],
    ]);
    // live: the same rules
    await write(gw, 'PATCH', `${PERSONS}/tr-b-${kind}`, { metadata: { labels: { [LABEL]: 'gone' } } }, MERGE);
    await w.until((ev) => ev.length >= 4, 'live DELETED');
    expect(w.changes()[3]).toMatchObject({ type: 'DELETED', object: { metadata: { name: `tr-b-${kind}` } } });
    w.close();
  });

  it('resumes across a reconnect and a gateway restart without loss or duplicate', async () => {
    const w1 = openWatch(gw, `?labelSelector=${LABEL}=rs`);
    await w1.opened;
    // The (empty) initial list is read once its BOOKMARK came; rs-1 arrives as a live change.
    await w1.until((ev) => ev.length >= 1, 'the BOOKMARK ending the initial events');
    await write(gw, 'POST', PERSONS, person(`rs-1-${kind}`, { [LABEL]: 'rs' }));
    await w1.until(() => w1.changes().length >= 1, 'first change');
    const last = w1.changes()[0].resourceVersion;
    w1.close();
    await w1.closed;
    await write(gw, 'POST', PERSONS, person(`rs-2-${kind}`, { [LABEL]: 'rs' }));
    gw = await gw.restart();
    await write(gw, 'PATCH', `${PERSONS}/rs-1-${kind}`, { spec: { age: 61 } }, MERGE);
    const w2 = openWatch(gw, `?labelSelector=${LABEL}=rs&resourceVersion=${last}`);
    await w2.opened;
    await w2.until((ev) => ev.length >= 2, 'events after the resume point');
    await sleep(150);
    expect(w2.changes().map((e) => [e.type, e.object.metadata.name])).toEqual([
      ['ADDED', `rs-2-${kind}`],
      ['MODIFIED', `rs-1-${kind}`],
    ]);
    expect(BigInt(w2.events[0].resourceVersion) > BigInt(last)).toBe(true);
    w2.close();
  });

  it('sends BOOKMARK events with the latest position at a steady interval', async () => {
    gw.watches.configure({ bookmarkMs: 100 });
    const w = openWatch(gw, `?labelSelector=${LABEL}=bm&allowWatchBookmarks=true`);
    await w.opened;
    await w.until((ev) => ev.some((e) => e.type === 'BOOKMARK'), 'a BOOKMARK');
    const created = await write(gw, 'POST', PERSONS, person(`bm-${kind}`, { [LABEL]: 'elsewhere' }));
    expect(created.metadata.name).toBe(`bm-${kind}`);
    const list = await call(gw, 'GET', PERSONS, undefined, { authorization: adminAuth });
    // a bookmark reaches the position of a change the watcher did not even select
    await w.until(
      (ev) => ev.some((e) => e.type === 'BOOKMARK' && BigInt(e.resourceVersion) >= BigInt(list.body.resourceVersion)),
      'a BOOKMARK at the latest position',
    );
    expect(w.changes()).toEqual([]);
    w.close();
  });
});

describe('two gateway processes on one MongoDB-compatible database', () => {
  let gw: TestGateway;
  let other: Awaited<ReturnType<typeof startGatewayProcess>>;
  beforeAll(async () => {
    gw = await startTestGateway('mongodb');
    other = await startGatewayProcess({ dataDir: gw.dataDir, mongodbUrl: gw.mongodbUrl });
  }, 180_000);
  afterAll(async () => {
    await other?.stop();
    await gw?.dispose();
  });

  it('writes on either reach watchers and subscriptions on both, in one order both agree on, exactly once', async () => {
    const gw2 = { url: other.url };
    const start = (await call(gw, 'GET', PERSONS, undefined, { authorization: adminAuth })).body.resourceVersion;
    const w1 = openWatch(gw, `?resourceVersion=${start}`);
    const w2 = openWatch(gw2, `?resourceVersion=${start}`);
    await Promise.all([w1.opened, w2.opened]);
    // graphql-ws subscribers on both gateways, served by the same feed
    const subscribe = (target: { url: string }) => {
      const client = wsClient(target, { authorization: adminAuth });
      const sub = client.iterate({
        query: 'subscription ($rv: String) { peopleExampleCom_v1alpha1_watchPersons(resourceVersion: $rv) { type resourceVersion object { metadata { name version } } } }',
        variables: { rv: start },
      });
      return { client, sub };
    };
    const subs = [subscribe(gw), subscribe(gw2)];
    const acked: string[] = [];
    const writer = async (target: { url: string }, tag: string) => {
      for (let i = 0; i < 12; i++) {
        const o = await write(target, 'POST', PERSONS, person(`tp-${tag}-${i}`));
        acked.push(`${o.metadata.name}@${o.metadata.version}`);
        // both gateways update the same shared objects: concurrent writers of one object
        const r = await call(target, 'PATCH', `${PERSONS}/tp-a-${Math.floor(i / 2)}`, { spec: { age: i } }, { authorization: adminAuth, ...MERGE });
        if (r.status === 200) acked.push(`${r.body.metadata.name}@${r.body.metadata.version}`);
      }
    };
    await Promise.all([writer(gw, 'a'), writer(gw2, 'b')]);
    const n = acked.length;
    await w1.until((ev) => ev.length >= n, `${n} events on gateway 1`, 30_000);
    await w2.until((ev) => ev.length >= n, `${n} events on gateway 2`, 30_000);
    await sleep(300);
    const seq = (w: Watcher) => w.changes().map((e) => `${e.resourceVersion} ${e.type} ${key(e)}`);
    expect(seq(w1)).toEqual(seq(w2));
    expect(seq(w1)).toHaveLength(n);
    expect(new Set(w1.changes().map(key))).toEqual(new Set(acked));
    const rvs = w1.changes().map((e) => BigInt(e.resourceVersion));
    for (let i = 1; i < rvs.length; i++) expect(rvs[i]! > rvs[i - 1]!).toBe(true);
    // per object, versions only go up along the feed
    const lastVersion = new Map<string, number>();
    for (const e of w1.changes()) {
      const prev = lastVersion.get(e.object.metadata.name) ?? 0;
      expect(e.object.metadata.version).toBeGreaterThan(prev);
      lastVersion.set(e.object.metadata.name, e.object.metadata.version);
    }
    for (const { client, sub } of subs) {
      const got = (await take(sub, n, 20_000)).map((r) => {
        const e = r.data.peopleExampleCom_v1alpha1_watchPersons;
        return `${e.resourceVersion} ${e.type} ${e.object.metadata.name}@${e.object.metadata.version}`;
      });
      expect(got).toEqual(seq(w1));
      await sub.return?.();
      await client.dispose();
    }
    w1.close();
    w2.close();
  }, 120_000);
});

describe('stream safety (embedded)', () => {
  let gw: TestGateway;
  let allowed = true;
  const authorizer: Authorizer = {
    async authorize(a: Attributes) {
      if (a.verb !== 'watch') return allowAll.authorize(a);
      if (a.caller.username === 'anonymous') return { allowed: false, names: new Set(['only-me']), reason: 'test: resourceNames [only-me]' };
      return { allowed, reason: 'test' };
    },
  };
  beforeAll(async () => {
    gw = await startTestGateway('embedded', { authorizer });
  });
  afterAll(() => gw?.dispose());
  afterEach(() => gw?.watches.configure());

  it('a revoked watch right ends open streams with ERROR 403 within seconds', async () => {
    gw.watches.configure({ recheckMs: 100 });
    allowed = true;
    const w = openWatch(gw);
    await w.opened;
    allowed = false;
    const code = await w.closed;
    allowed = true;
    expect(w.events.at(-1)).toMatchObject({ type: 'ERROR', object: { code: 403 } });
    expect(code).toBe(4403);
  });

  it('a resourceNames grant opens a watch restricted to those names: other objects are never sent', async () => {
    const w = openWatch(gw, '', {});
    await w.opened;
    await write(gw, 'POST', PERSONS, person('not-me'));
    await write(gw, 'POST', PERSONS, person('only-me'));
    await w.until((ev) => ev.length >= 1, 'the granted object');
    await sleep(150);
    expect(w.changes().map((e) => e.object.metadata.name)).toEqual(['only-me']);
    w.close();
  });

  it('five malformed upgrades leave nothing subscribed', async () => {
    await sleep(100);
    const before = gw.watches.count();
    const { port } = new URL(gw.url);
    for (let i = 0; i < 5; i++) {
      const answer = await new Promise<string>((resolve, reject) => {
        const s = connect(Number(port), '127.0.0.1');
        let text = '';
        s.on('data', (d) => (text += String(d)));
        s.on('close', () => resolve(text));
        s.on('error', reject);
        // an upgrade without Sec-WebSocket-Key: the handshake must fail
        s.write(`GET ${PERSONS}?watch=true HTTP/1.1\r\nHost: x\r\nAuthorization: ${adminAuth}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\r\n`);
        setTimeout(() => s.end(), 300);
      });
      expect(answer).toMatch(/^HTTP\/1\.1 400/);
    }
    await sleep(100);
    expect(gw.watches.count()).toBe(before);
  });

  it('a slow consumer is cut off with ERROR 503 while other watchers get everything', async () => {
    gw.watches.configure({ softBufferBytes: 64 << 10, stallMs: 200, hardBufferBytes: 256 << 10 });
    const before = gw.watches.count();
    const { port } = new URL(gw.url);
    // A client that completes the handshake and then never reads.
    const slow = connect(Number(port), '127.0.0.1');
    let head = '';
    await new Promise<void>((resolve) => {
      slow.on('data', (d) => {
        head += String(d);
        if (head.includes('\r\n\r\n')) {
          slow.pause();
          resolve();
        }
      });
      slow.write(
        `GET ${PERSONS}?labelSelector=${LABEL}=slow HTTP/1.1\r\nHost: x\r\nAuthorization: ${adminAuth}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`,
      );
    });
    expect(head).toMatch(/^HTTP\/1\.1 101/);
    const fast = openWatch(gw, `?labelSelector=${LABEL}=slow`);
    await fast.opened;
    await sleep(100);
    expect(gw.watches.count()).toBe(before + 2);
    const big = 'x'.repeat(60_000);
    const N = 120;
    for (let i = 0; i < N; i++) {
      await write(gw, 'POST', PERSONS, { ...person(`slow-${i}`, { [LABEL]: 'slow' }), metadata: { name: `slow-${i}`, labels: { [LABEL]: 'slow' }, annotations: { 'people.example.com/blob': big } } });
    }
    await fast.until((ev) => ev.length >= N, 'every event on the fast watcher', 30_000);
    // the slow one is gone (subscription ended), the fast one still runs
    for (let i = 0; i < 100 && gw.watches.count() !== before + 1; i++) await sleep(50);
    expect(gw.watches.count()).toBe(before + 1);
    slow.destroy();
    fast.close();
  }, 60_000);

  it('a reader handed more than the hard limit in one delivery keeps its stream (the limit counts what was unsent before it)', async () => {
    // A watch that resumes from before a run of large writes gets them in one read; so does a
    // live watcher after the feed fell behind for a moment. That is one delivery, not a sign of
    // a slow reader: before, it alone exceeded the hard limit and the reader was cut at once.
    gw.watches.configure({ softBufferBytes: 64 << 10, stallMs: 2000, hardBufferBytes: 256 << 10 });
    const list = await call(gw, 'GET', PERSONS, undefined, { authorization: adminAuth });
    const N = 30;
    const blob = () => randomBytes(45_000).toString('base64'); // ~60 KB that does not compress away
    for (let i = 0; i < N; i++) {
      await write(gw, 'POST', PERSONS, { ...person(`bg-${i}`, { [LABEL]: 'bg' }), metadata: { name: `bg-${i}`, labels: { [LABEL]: 'bg' }, annotations: { 'people.example.com/blob': blob() } } });
    }
    const w = openWatch(gw, `?labelSelector=${LABEL}=bg&resourceVersion=${list.body.resourceVersion}`);
    await w.opened;
    await w.until((ev) => ev.length >= N || ev.some((e) => e.type === 'ERROR'), `${N} replayed events`);
    expect(w.events.filter((e) => e.type === 'ERROR')).toEqual([]);
    expect(w.changes()).toHaveLength(N);
    await write(gw, 'POST', PERSONS, person(`bg-live`, { [LABEL]: 'bg' }));
    await w.until((ev) => ev.length >= N + 1, 'the next live event');
    expect(w.changes().at(-1)).toMatchObject({ type: 'ADDED', object: { metadata: { name: `bg-live` } } });
    w.close();
  }, 60_000);

  it('watches of a model end with ERROR 410 when the model is unregistered', async () => {
    const w = openWatch(gw, '', { authorization: adminAuth }, '/apis/crm.example.net/v1/people');
    await w.opened;
    expect(gw.registry.unregister('crm.example.net', 'v1', 'people')).toBe(true);
    const code = await w.closed;
    expect(w.events.at(-1)).toMatchObject({ type: 'ERROR', object: { code: 410 } });
    expect(code).toBe(4410);
  });
});
