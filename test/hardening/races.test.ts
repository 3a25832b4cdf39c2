/**
 * Concurrency and crash figures (issue 11), on both stores:
 *  - 50 clients doing read-modify-write through PUT with `version`, retrying on 409: no lost
 *    increment.
 *  - 100 parallel creates of one unique value: exactly one 201, stored once. MongoDB: from two
 *    gateway processes on one database (started together, which also races their index setup);
 *    embedded: the store is synchronous in one process, so the race is across requests.
 *  - `kill -9` of a gateway process while 20 clients create: after a restart every acknowledged
 *    write is readable by GET and by an indexed list, nothing is visible in one and not the
 *    other, and a unique value held by a create that never completed is free within 10 s of the
 *    restart (MongoDB: the killed writer's lease shows it gone, store/mongo/claims.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, call, freshMongoUrl, startTestGateway, STORES, type StoreKind, type TestGateway } from '../helpers/gateway.js';
import { spawnGateway, tempDir, type GatewayProcess } from './processes.js';

const PERSONS = '/apis/people.example.com/v1alpha1/persons';
const PEOPLE = '/apis/crm.example.net/v1/people'; // spec.email is a unique index
const H = { authorization: adminAuth };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function post(url: string, path: string, body: unknown): Promise<number> {
  const r = await fetch(url + path, { method: 'POST', headers: { ...H, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  await r.text();
  return r.status;
}

/** A unique value claimed by a create the killed gateway never completed is free by then (docs/API.md §11). */
const FREE_WITHIN_MS = 10_000;

describe.each(STORES)('read-modify-write (%s)', (kind) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(kind);
  });
  afterAll(() => gw?.dispose());

  it('50 clients incrementing one counter with version + retry on 409 lose no increment', async () => {
    const KEY = 'count.example.com/n';
    await call(gw, 'POST', PERSONS, { metadata: { name: 'counter', annotations: { [KEY]: '0' } }, spec: { name: 'Counter' } }, H);
    const until = Date.now() + 3000;
    let acknowledged = 0;
    let conflicts = 0;
    await Promise.all(
      Array.from({ length: 50 }, async () => {
        while (Date.now() < until) {
          const cur = await call(gw, 'GET', `${PERSONS}/counter`, undefined, H);
          const n = Number(cur.body.metadata.annotations[KEY]);
          const body = { ...cur.body, metadata: { ...cur.body.metadata, annotations: { [KEY]: String(n + 1) } } };
          const r = await call(gw, 'PUT', `${PERSONS}/counter`, body, H);
          if (r.status === 200) acknowledged++;
          else if (r.status === 409) conflicts++;
          else throw new Error(`unexpected ${r.status}: ${JSON.stringify(r.body)}`);
        }
      }),
    );
    const final = Number((await call(gw, 'GET', `${PERSONS}/counter`, undefined, H)).body.metadata.annotations[KEY]);
    console.log(`[figure] read-modify-write (${kind}): 50 clients, ${acknowledged} acknowledged increments, ${conflicts} conflicts retried, final counter ${final}, lost ${acknowledged - final}`);
    expect(acknowledged).toBeGreaterThan(0);
    expect(final).toBe(acknowledged);
  });
});

describe('100 parallel creates of one unique value', () => {
  async function race(urls: string[]): Promise<{ created: number; conflicts: number; other: number[]; stored: number }> {
    const email = 'same@example.com';
    const statuses = await Promise.all(
      Array.from({ length: 100 }, (_, i) => post(urls[i % urls.length]!, PEOPLE, { metadata: { name: `u-${i}` }, spec: { email } })),
    );
    const created = statuses.filter((s) => s === 201).length;
    const conflicts = statuses.filter((s) => s === 409).length;
    const list = await call({ url: urls[0]! }, 'GET', `${PEOPLE}?fieldSelector=spec.email=${email}`, undefined, H);
    const all = await call({ url: urls[0]! }, 'GET', `${PEOPLE}`, undefined, H);
    expect(all.body.total).toBe(list.body.total);
    return { created, conflicts, other: statuses.filter((s) => s !== 201 && s !== 409), stored: list.body.total };
  }

  it('mongodb: two gateway processes on one database → exactly one 201, stored once', async () => {
    const url = freshMongoUrl();
    const [a, b] = await Promise.all([spawnGateway({ MONGODB_URL: url }), spawnGateway({ MONGODB_URL: url })]);
    try {
      const r = await race([a.url, b.url]);
      console.log(`[figure] unique race (mongodb, 2 processes): 100 creates → ${r.created} × 201, ${r.conflicts} × 409, other ${JSON.stringify(r.other)}; stored ${r.stored}`);
      expect(r).toMatchObject({ created: 1, conflicts: 99, other: [], stored: 1 });
    } finally {
      await Promise.all([a.kill(), b.kill()]);
    }
  }, 120_000);

  it('embedded: 100 concurrent requests → exactly one 201, stored once', async () => {
    const gw = await startTestGateway('embedded');
    try {
      const r = await race([gw.url]);
      console.log(`[figure] unique race (embedded, across requests): 100 creates → ${r.created} × 201, ${r.conflicts} × 409, other ${JSON.stringify(r.other)}; stored ${r.stored}`);
      expect(r).toMatchObject({ created: 1, conflicts: 99, other: [], stored: 1 });
    } finally {
      await gw.dispose();
    }
  });
});

describe.each(STORES)('kill -9 of the gateway while 20 clients create (%s)', (kind: StoreKind) => {
  let env: { MONGODB_URL?: string; SVC_DATA_DIR?: string };
  let proc: GatewayProcess | undefined;
  beforeAll(async () => {
    env = kind === 'mongodb' ? { MONGODB_URL: freshMongoUrl() } : { SVC_DATA_DIR: await tempDir() };
  });
  afterAll(() => proc?.kill('SIGKILL'));

  it('every acknowledged write survives, GET and indexed list agree, no unique value is stuck', async () => {
    proc = await spawnGateway(env);
    const acknowledged: string[] = [];
    const inDoubt: string[] = [];
    let stop = false;
    const clients = Array.from({ length: 20 }, async (_, c) => {
      for (let i = 0; !stop; i++) {
        const name = `k-${c}-${i}`;
        try {
          const s = await post(proc!.url, PEOPLE, { metadata: { name }, spec: { email: `${name}@example.com` } });
          if (s === 201) acknowledged.push(name);
          else if (s >= 500) inDoubt.push(name);
          else throw new Error(`create ${name}: ${s}`);
        } catch (e) {
          if ((e as Error).message.startsWith('create')) throw e;
          inDoubt.push(name); // no answer: the process died under it
          return;
        }
      }
    });
    // Kill mid-stream once writes are flowing (a fresh gateway under load can take seconds to
    // acknowledge its first creates; a fixed delay then killed it before any was acknowledged).
    for (const until = Date.now() + 30_000; acknowledged.length < 20 && Date.now() < until; ) await sleep(50);
    await sleep(500);
    const killedAt = Date.now();
    await proc.kill('SIGKILL');
    stop = true;
    await Promise.all(clients);
    proc = await spawnGateway(env);
    const restartedAt = Date.now();
    const url = proc.url;

    let lost = 0;
    let unlisted = 0;
    const check = async (name: string) => {
      const got = await call({ url }, 'GET', `${PEOPLE}/${name}`, undefined, H);
      if (got.status !== 200) lost++;
      const listed = await call({ url }, 'GET', `${PEOPLE}?fieldSelector=spec.email=${name}@example.com`, undefined, H);
      if (listed.body.total !== 1 || listed.body.items[0]?.metadata.name !== name) unlisted++;
    };
    for (let k = 0; k < acknowledged.length; k += 10) await Promise.all(acknowledged.slice(k, k + 10).map(check));
    // In-doubt creates either happened completely or not at all, and their value is free when not.
    // A claim left by the killed writer is repaired by the next writer once the writer's lease
    // shows it gone (store/mongo/claims.ts): within 10 s of the restart (docs/API.md §11), not
    // after the 30 s claim grace.
    let doubtStored = 0;
    const waited: string[] = [];
    for (const name of inDoubt) {
      const got = await call({ url }, 'GET', `${PEOPLE}/${name}`, undefined, H);
      const listed = await call({ url }, 'GET', `${PEOPLE}?fieldSelector=spec.email=${name}@example.com`, undefined, H);
      if (got.status === 200) {
        doubtStored++;
        if (listed.body.total !== 1) unlisted++;
      } else {
        expect(listed.body.total).toBe(0);
        const again = await post(url, PEOPLE, { metadata: { name: `${name}-again` }, spec: { email: `${name}@example.com` } });
        if (again !== 201) waited.push(name);
      }
    }
    const freeAtOnce = inDoubt.length - doubtStored - waited.length;
    let stuck = 0;
    let freedBy = 0;
    for (const name of waited) {
      for (;;) {
        const again = await post(url, PEOPLE, { metadata: { name: `${name}-again` }, spec: { email: `${name}@example.com` } });
        if (again === 201) break;
        if (Date.now() > restartedAt + FREE_WITHIN_MS) {
          stuck++;
          break;
        }
        await sleep(250);
      }
      freedBy = Math.max(freedBy, Date.now() - restartedAt);
    }
    const all = await call({ url }, 'GET', PEOPLE, undefined, H);
    const expected = acknowledged.length + doubtStored + (inDoubt.length - doubtStored - stuck);
    console.log(
      `[figure] kill -9 (${kind}): ${acknowledged.length} acknowledged creates, ${inDoubt.length} in doubt (${doubtStored} stored); ` +
        `after restart lost ${lost}, not in the indexed list ${unlisted}; unique values of unstored creates free at once ${freeAtOnce}, ` +
        `free later ${waited.length - stuck} (all by ${freedBy} ms after the restart, ${Date.now() - killedAt} ms after the kill), ` +
        `stuck after ${FREE_WITHIN_MS / 1000} s ${stuck}; objects ${all.body.total} (expected ${expected})`,
    );
    expect(acknowledged.length).toBeGreaterThan(0);
    expect({ lost, unlisted, stuck }).toEqual({ lost: 0, unlisted: 0, stuck: 0 });
    expect(all.body.total).toBe(expected);
  }, 180_000);
});
