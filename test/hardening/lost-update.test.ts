/**
 * No lost update on MongoDB/FerretDB when writes the store deadline gave up on reach the server
 * later (issue 20: 3 of 1,000 acknowledged increments lost under load). Writers race
 * GET-modify-PUT increments of one counter, carrying metadata.version and retrying on 409 and
 * 503, through a TCP proxy (test/helpers/wire-proxy.ts) that holds some object writes back for
 * longer than the store deadline: the driver gives up on them (503), and the server still
 * carries them out afterwards. Every acknowledged increment must be in the final count, and no
 * version may be acknowledged to two writers.
 *
 * On FerretDB a conditional write is a read and then a write by `_id`, so two copies of one
 * write (the one given up on, still on its way, and one sent again to learn the outcome) can
 * put an object back to an older state when they overlap (src/store/mongo/cas.ts, 2.). That
 * overlap needs the server to stall between the two steps, which only heavy load brings about
 * (it cost one version acknowledged twice in a full run); the test therefore also checks the
 * cause on the wire: no object write is sent twice there.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { DelayProxy } from '../helpers/wire-proxy.js';
import { randomBytes } from 'node:crypto';
import { MongoClient, type Document } from 'mongodb';

const PERSONS = '/apis/people.example.com/v1alpha1/persons';
const OBJECTS = 'ext.people.example.com.v1alpha1.persons';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('GET-modify-PUT increments through a proxy that delays abandoned writes (mongodb)', () => {
  let proxy: DelayProxy;
  let gw: TestGateway;
  let isFerret = false;
  beforeAll(async () => {
    const target = new URL(inject('mongodbUrl'));
    const probe = await MongoClient.connect(inject('mongodbUrl'));
    isFerret = typeof (await probe.db('admin').command({ buildInfo: 1 })).ferretdbVersion === 'string';
    await probe.close();
    proxy = await DelayProxy.start({ host: target.hostname, port: Number(target.port) });
    gw = await startTestGateway('mongodb', {
      mongodbUrl: `mongodb://127.0.0.1:${proxy.port}/svc_lost_${randomBytes(4).toString('hex')}`,
      limits: { storeTimeoutMs: 600 },
    });
  });
  afterAll(async () => {
    await gw?.dispose();
    await proxy?.close();
  });

  it('every acknowledged increment counts once', { timeout: 120_000 }, async () => {
    const name = 'counter';
    const created = await call(gw, 'POST', PERSONS, { metadata: { name, annotations: { count: '0' } }, spec: { name: 'c' } });
    expect(created.status).toBe(201);
    let rnd = 1;
    const random = () => ((rnd = (rnd * 48271) % 2147483647) / 2147483647);
    // Some object writes (replace, delete) are held past the store deadline (600 ms).
    // Every object write as sent (condition and new document, which names the write's own feed
    // entry), to count copies of one write. Two writes of one condition are fine: a writer that
    // read an old version may try it after the first one's marker was released, and is refused.
    const sent = new Map<string, number>();
    const writesIn = (cmd: Document, sequence: Document[]): string[] => {
      if (cmd.update === OBJECTS) return [...((cmd.updates as Document[] | undefined) ?? []), ...sequence].map((u) => JSON.stringify({ q: u.q, u: u.u }));
      return [];
    };
    proxy.policy = (cmd, sequence) => {
      for (const w of writesIn(cmd, sequence)) sent.set(w, (sent.get(w) ?? 0) + 1);
      return (cmd.update === OBJECTS || cmd.findAndModify === OBJECTS) && random() < 0.25 ? 700 + random() * 900 : 0;
    };

    const acked: number[] = [];
    let unavailable = 0;
    const WRITERS = 8;
    const EACH = 8;
    await Promise.all(
      Array.from({ length: WRITERS }, async () => {
        for (let done = 0; done < EACH; ) {
          const got = await call(gw, 'GET', `${PERSONS}/${name}`);
          if (got.status !== 200) {
            await sleep(50);
            continue;
          }
          const obj = got.body;
          const next = { ...obj, metadata: { ...obj.metadata, annotations: { count: String(Number(obj.metadata.annotations.count) + 1) } } };
          const put = await call(gw, 'PUT', `${PERSONS}/${name}`, next);
          if (put.status === 200) {
            acked.push(put.body.metadata.version);
            done++;
          } else if (put.status === 503) unavailable++;
          else expect(put.status, JSON.stringify(put.body)).toBe(409);
        }
      }),
    );
    const writes = [...sent.values()].reduce((a, b) => a + b, 0);
    proxy.policy = () => 0;
    await sleep(3000); // every held write has reached the server
    const final = await call(gw, 'GET', `${PERSONS}/${name}`);
    console.log(`acked ${acked.length}, 503s ${unavailable}, held ${proxy.held}, final count ${final.body.metadata.annotations.count}`);
    expect(proxy.held).toBeGreaterThan(0);
    // Every write of the counter was seen, each with its version condition and its own entry.
    expect(writes).toBeGreaterThanOrEqual(acked.length);
    expect([...sent.keys()].every((w) => w.includes('"_svc.v"') && w.includes('"f":'))).toBe(true);
    if (isFerret) expect([...sent].filter(([, n]) => n > 1).map(([w]) => w.slice(0, 100)), 'one write sent twice (FerretDB)').toEqual([]);
    expect(new Set(acked).size, 'a version acknowledged to two writers').toBe(acked.length);
    // Writes answered 503 may have happened too; every write that happened, acknowledged or
    // not, moved the version and the count by one each from the same start.
    const count = Number(final.body.metadata.annotations.count);
    expect(count).toBeGreaterThanOrEqual(acked.length);
    expect(count, 'a write overwrote another one').toBe(final.body.metadata.version - created.body.metadata.version);
    expect(final.body.metadata.version).toBeGreaterThanOrEqual(Math.max(...acked));
  });
  it('a write lost on its way holds its version on FerretDB until the doubt period ends, then frees it; MongoDB sends it again', { timeout: 60_000 }, async () => {
    const name = 'lost-on-its-way';
    const created = await call(gw, 'POST', PERSONS, { metadata: { name }, spec: { name: 'l' } });
    expect(created.status).toBe(201);
    const v = created.body.metadata.version;
    const put = (note: string) => call(gw, 'PUT', `${PERSONS}/${name}`, { ...created.body, metadata: { ...created.body.metadata, annotations: { note } } });
    let drop = true;
    proxy.policy = (cmd, sequence) => {
      const q = [...((cmd.updates as Document[] | undefined) ?? []), ...sequence][0]?.q as Document | undefined;
      if (cmd.update !== OBJECTS || q?._id !== name || !drop) return 0;
      drop = false;
      return -1; // never reaches the server
    };
    const first = await put('lost');
    expect(first.status).toBe(503);
    expect(proxy.dropped).toBe(1);
    const t0 = Date.now();
    if (isFerret) {
      // The writer cannot know the write will never land: nobody else writes that version meanwhile.
      expect((await put('second')).status).toBe(409);
      let second = await put('second');
      while (second.status === 409 && Date.now() - t0 < 20_000) {
        await sleep(250);
        second = await put('second');
      }
      expect(second.status).toBe(200);
      expect(Date.now() - t0).toBeGreaterThan(4000);
      expect(second.body.metadata.version).toBe(v + 1);
    } else {
      // Sent again (the conditional write is atomic there), so it lands once: its version is taken.
      let got = await call(gw, 'GET', `${PERSONS}/${name}`);
      while (got.body.metadata.annotations?.note !== 'lost' && Date.now() - t0 < 20_000) {
        await sleep(250);
        got = await call(gw, 'GET', `${PERSONS}/${name}`);
      }
      expect(got.body.metadata.annotations?.note).toBe('lost');
      expect((await put('second')).status).toBe(409);
    }
  });
});
