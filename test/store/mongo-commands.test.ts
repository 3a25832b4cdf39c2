/**
 * Commands per write on the MongoDB store, counted with the driver's command monitoring
 * (test/helpers/commands.ts) through a real gateway on FerretDB: a create, an update (PUT), a
 * merge patch and a delete of a model without unique indexes each send at most WRITE_BUDGET
 * commands while the request is in flight (reading the object once), and an idle gateway with
 * several models and watchers sends at most IDLE_BUDGET commands a second in all.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { CommandLog, describeCommands, modelCollections, type SeenCommand } from '../helpers/commands.js';
import { MERGE, openWatch, person, PERSONS, sleep } from '../watch/helpers.js';

/**
 * Commands on the request's path per write (issue 20, "A lean write path"; before it: 3, 8, 8,
 * 8). On FerretDB an update or delete is: the handler's read, the pending feed entry, the
 * compare-and-set marker (cas.ts) and the conditional object write; on MongoDB the marker is
 * not needed.
 */
const WRITE_BUDGET: Record<string, number> = { create: 2, update: 4, patch: 4, delete: 4 };
/**
 * Amortised feed and marker bookkeeping, all writes together: at most this many per write, for
 * this one sequential client (the worst case: concurrent writers share each batch).
 */
const BOOKKEEPING_PER_WRITE = 0.75;

/**
 * Bookkeeping sent in batches off the request path (it may start while a later request is in
 * flight): entry confirmations (`update` of a feed segment by `_id: {$in}`) and the sweep of
 * released compare-and-set markers (`delete` by `_id: {$in}`).
 */
const batched = (c: SeenCommand): boolean => {
  const first = ((c.command.updates ?? c.command.deletes) as { q?: { _id?: { $in?: unknown } } }[] | undefined)?.[0];
  return (c.name === 'update' || c.name === 'delete') && first?.q?._id?.$in !== undefined;
};
/** Commands a second an idle gateway sends in all (before: ~90 with four watched models, ~23 with none). */
const IDLE_BUDGET = 5;
const ROUNDS = 10;
const onPersons = modelCollections('people.example.com/v1alpha1/persons');

describe('MongoDB commands per request', () => {
  const log = new CommandLog();
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway('mongodb', { onMongoCommand: log.listener });
  });
  afterAll(() => gw?.dispose());

  it(`create, update, merge patch and delete each stay within their command budget on the request path`, async () => {
    const per: Record<string, number[]> = { create: [], get: [], update: [], patch: [], delete: [] };
    const sent: Record<string, string> = {};
    let bookkeeping = 0;
    let writes = 0;
    const measure = async (what: string, fn: () => Promise<{ status: number }>, want: number) => {
      let status = 0;
      const all = await log.during(async () => (status = (await fn()).status), onPersons);
      expect(status, what).toBe(want);
      const cs = all.filter((c) => !batched(c));
      bookkeeping += all.length - cs.length;
      if (what !== 'get') writes++;
      per[what]!.push(cs.length);
      sent[what] = describeCommands(cs);
    };
    for (let i = 0; i < ROUNDS; i++) {
      const name = `cc-${i}`;
      await measure('create', () => call(gw, 'POST', PERSONS, person(name)), 201);
      await measure('get', () => call(gw, 'GET', `${PERSONS}/${name}`), 200);
      const { body } = await call(gw, 'GET', `${PERSONS}/${name}`);
      await measure('update', () => call(gw, 'PUT', `${PERSONS}/${name}`, { ...body, spec: { ...body.spec, age: 40 } }), 200);
      await measure('patch', () => call(gw, 'PATCH', `${PERSONS}/${name}`, { spec: { age: 41 } }, MERGE), 200);
      await measure('delete', () => call(gw, 'DELETE', `${PERSONS}/${name}`), 200);
      await sleep(20);
    }
    // what is left of the batches after the last request
    bookkeeping += (await log.over(1500)).filter((c) => onPersons(c) && batched(c)).length;
    console.log(`bookkeeping: ${bookkeeping} batched commands for ${writes} writes`);
    expect(bookkeeping / writes).toBeLessThanOrEqual(BOOKKEEPING_PER_WRITE);
    const table = Object.entries(per).map(([k, v]) => `${k}: max ${Math.max(...v)}, mean ${(v.reduce((a, b) => a + b, 0) / v.length).toFixed(1)} (${sent[k]})`);
    console.log(`commands per request on the model's collections:\n${table.join('\n')}`);
    for (const w of ['create', 'update', 'patch', 'delete']) expect(Math.max(...per[w]!), `${w}: ${sent[w]}`).toBeLessThanOrEqual(WRITE_BUDGET[w]!);
  });

  it(`an idle gateway with several models and watchers sends at most ${IDLE_BUDGET} commands a second, and changes still reach watchers within 1 s`, async () => {
    const other = await startTestGateway('mongodb', { mongodbUrl: gw.mongodbUrl });
    const watchers = [
      openWatch(gw, ''),
      openWatch(gw, '?labelSelector=a=b'),
      openWatch(gw, '', undefined, '/api/v1alpha1/roles'),
      openWatch(gw, '', undefined, '/api/v1alpha1/rolebindings'),
      openWatch(gw, '', undefined, '/api/v1alpha1/users'),
    ];
    try {
      await Promise.all(watchers.map((w) => w.opened));
      await sleep(1500); // start-up work settles
      const SECONDS = 4;
      const idle = await log.over(SECONDS * 1000);
      const byKind = new Map<string, number>();
      for (const c of idle) byKind.set(`${c.name} ${c.coll}`, (byKind.get(`${c.name} ${c.coll}`) ?? 0) + 1);
      console.log(`idle: ${(idle.length / SECONDS).toFixed(1)} commands/s`, Object.fromEntries(byKind));
      expect(idle.length / SECONDS).toBeLessThanOrEqual(IDLE_BUDGET);

      // Writes through the other gateway reach this one's watcher by polling alone.
      const lat: number[] = [];
      for (let i = 0; i < 20; i++) {
        const name = `idle-${i}`;
        const from = watchers[0]!.events.length;
        const t0 = performance.now();
        expect((await call(other, 'POST', PERSONS, person(name))).status).toBe(201);
        await watchers[0]!.until((ev) => ev.slice(from).some((e) => e.object?.metadata?.name === name), name, 5000);
        lat.push(performance.now() - t0);
        await sleep(100 + ((i * 37) % 300));
      }
      lat.sort((a, b) => a - b);
      console.log(`delivery from another gateway: p50 ${lat[10]!.toFixed(0)} ms, max ${lat[19]!.toFixed(0)} ms`);
      expect(lat[19]).toBeLessThan(1000);
    } finally {
      for (const w of watchers) w.close();
      await other.dispose();
    }
  });
});
