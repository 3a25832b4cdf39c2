/**
 * Driver faults the MongoDB adapter works around (FerretDB from test/setup/ferretdb.ts):
 *  - a command written to a connection whose socket was destroyed before its 'close' event
 *    never settles in the driver (stalled-writes.ts); after a server kill this stopped the
 *    server monitor for good, so the gateway never recovered (test/hardening/outage.test.ts);
 *  - time-bounded operations (bounded.ts) end with StoreError `Unavailable`, and a batch that
 *    timed out as a whole is not taken for "every claim inserted".
 */
import { MongoClient } from 'mongodb';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { bounded } from '../../src/store/mongo/bounded.js';
import { releaseStalledWrites, watchStalledWrites } from '../../src/store/mongo/stalled-writes.js';
import { StoreError } from '../../src/store/errors.js';
import { ownFerret } from '../hardening/processes.js';

const url = inject('mongodbUrl');
const database = `svc_t_faults_${process.pid}`;

interface PoolInternals {
  connections: Iterable<{ socket: { destroy(): void } }>;
}
const poolOf = (client: MongoClient): PoolInternals =>
  [...(client as unknown as { topology: { s: { servers: Map<string, { pool: PoolInternals }> } } }).topology.s.servers.values()][0]!.pool;

const settledWithin = <T>(p: Promise<T>, ms: number) =>
  Promise.race([
    p.then(
      () => 'resolved',
      (e: unknown) => `rejected: ${(e as Error).message}`,
    ),
    new Promise<string>((r) => setTimeout(() => r('still waiting'), ms).unref()),
  ]);

describe('MongoDB driver faults', () => {
  const clients: MongoClient[] = [];
  afterEach(async () => {
    // (Without the rescue a stalled write also keeps close() waiting.)
    for (const c of clients.splice(0)) await settledWithin(c.close(true), 5000);
  });

  it('a command written to a just-destroyed socket is released instead of waiting forever', async () => {
    const client = new MongoClient(url, { maxPoolSize: 1, serverSelectionTimeoutMS: 5000 });
    clients.push(client);
    const stop = watchStalledWrites(client, 200);
    try {
      const coll = client.db(database).collection('t');
      await coll.findOne({});
      // The pool's only connection: destroy its socket, and before its 'close' event (next
      // loop turn) the next command is checked out onto it and written.
      const [conn] = [...poolOf(client).connections];
      conn!.socket.destroy();
      const outcome = await settledWithin(coll.findOne({}), 10_000);
      // Released, the write fails as a network error; the driver retries the read once on a
      // new connection, so the command succeeds.
      expect(outcome).toBe('resolved');
    } finally {
      stop();
    }
  });

  it('releaseStalledWrites leaves live connections alone', async () => {
    const client = new MongoClient(url, { maxPoolSize: 2, serverSelectionTimeoutMS: 5000 });
    clients.push(client);
    const coll = client.db(database).collection('t');
    await Promise.all([coll.findOne({}), coll.countDocuments({})]);
    expect(releaseStalledWrites(client)).toBe(0);
    await expect(coll.findOne({})).resolves.toBeDefined();
  });

  it('bounded operations on a paused server end as StoreError Unavailable, a timed-out insertMany included', async () => {
    const ferret = await ownFerret();
    const client = new MongoClient(ferret.url(database), { serverSelectionTimeoutMS: 5000 });
    clients.push(client);
    try {
      const plain = client.db().collection<{ _id: string; n?: number }>('bounded');
      await plain.insertOne({ _id: 'a' });
      const coll = bounded(plain, 500);
      await ferret.pause();
      const started = Date.now();
      let errors: unknown[];
      try {
        errors = await Promise.all([
          coll.findOne({ _id: 'a' }).catch((e: unknown) => e),
          coll.insertMany([{ _id: 'x' }, { _id: 'y' }], { ordered: false }).catch((e: unknown) => e),
          coll.updateOne({ _id: 'a' }, { $set: { n: 1 } }).catch((e: unknown) => e),
          coll.countDocuments({}).catch((e: unknown) => e),
        ]);
      } finally {
        ferret.signal('SIGCONT');
      }
      // Bounded by the signal, not by socketTimeoutMS (30 s) or the server's return.
      expect(Date.now() - started).toBeLessThan(10_000);
      for (const e of errors) {
        expect(e).toBeInstanceOf(StoreError);
        expect((e as StoreError).code).toBe('Unavailable');
      }
      // Once the server is back the same bounded collection works.
      expect(await bounded(plain, 30_000).findOne({ _id: 'a' })).toMatchObject({ _id: 'a' });
    } finally {
      await settledWithin(client.close(true), 5000);
      await ferret.dispose();
    }
  }, 60_000);
});
