/**
 * A feed entry insert (step 1 of the pending-entry protocol, src/store/mongo/feed.ts `begin`)
 * whose connection is cut after the server carried it out and before its reply reached the
 * driver. The fault is real: a TCP proxy (node:net) between the driver and FerretDB forwards
 * everything, except that after the first `insert` into a `feed.` collection it drops the
 * server's reply and closes both connections.
 *
 * What follows depends on the server the driver sees:
 *  - a replica set member (FerretDB started with `--repl-set-name`): the driver retries the
 *    insert once on a new connection (retryable writes, on by default). FerretDB does not
 *    deduplicate retried writes, so the retry fails with a duplicate key on the entry the first
 *    attempt inserted; the entry's per-attempt key `k` tells the writer it is its own;
 *  - a standalone server (the FerretDB of test/setup/ferretdb.ts, and any plain FerretDB or
 *    mongod): the driver never retries writes there, the write fails `Unavailable` and the
 *    writer fences and aborts the entry it may have left (feed.ts `doubt`).
 */
import { randomBytes } from 'node:crypto';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { MongoClient, type Document } from 'mongodb';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { createMongoStore } from '../../src/store/mongo/index.js';
import { collectionNames } from '../../src/store/mongo/document.js';
import { pad } from '../../src/store/mongo/feed.js';
import type { ModelStore, Store } from '../../src/store/types.js';
import { ownFerret } from '../hardening/processes.js';
import { messages, opMsg } from '../helpers/wire-proxy.js';
import { bump, expectStoreError, makeModel, query, until, widget } from './contract.js';

/** The collection and `_id` of a client message that inserts into a `feed.` collection. */
function feedInsert(msg: Buffer): { coll: string; id: string } | undefined {
  const m = opMsg(msg);
  if (typeof m?.body?.insert !== 'string' || !m.body.insert.startsWith('feed.')) return undefined;
  const docs = (m.body.documents as Document[] | undefined) ?? m.sequence;
  return { coll: m.body.insert, id: String(docs[0]?._id) };
}

/** What the server answered to an insert: 'ok', or the code of its (first) error. */
function insertAnswer(msg: Buffer): string {
  const body = opMsg(msg)?.body;
  const writeErrors = body?.writeErrors as { code: number }[] | undefined;
  if (writeErrors?.length) return `error ${writeErrors[0]!.code}`;
  return body?.ok === 1 ? 'ok' : `error ${String(body?.code)}`;
}

/** The collection and `_id` of a client message that updates an object collection (`ext.`). */
function objectUpdate(msg: Buffer): { coll: string; id: string } | undefined {
  const m = opMsg(msg);
  if (typeof m?.body?.update !== 'string' || !m.body.update.startsWith('ext.')) return undefined;
  const updates = (m.body.updates as Document[] | undefined) ?? m.sequence;
  return { coll: m.body.update, id: String((updates[0]?.q as Document | undefined)?._id) };
}

/**
 * Forwards MongoDB wire traffic to `target`. Once armed, the next command `watch` picks (by
 * default a feed entry insert) is forwarded to the server, and when the server's reply comes
 * back the reply is dropped and both sides of that connection are closed: the server did the
 * write, the driver never hears about it.
 */
class CuttingProxy {
  /** Every feed entry insert the driver sent, in order. */
  readonly inserts: { coll: string; id: string }[] = [];
  /** The server's answer to each of them: 'withheld' (connection cut), 'ok', 'error <code>'. */
  readonly answers: string[] = [];
  /** Replies withheld (connections cut). */
  cuts = 0;
  private armed = false;
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
    private readonly watch: (msg: Buffer) => { coll: string; id: string } | undefined,
  ) {}

  static async start(target: { host: string; port: number }, watch = feedInsert): Promise<CuttingProxy> {
    const server = createServer();
    await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
    const proxy = new CuttingProxy(server, (server.address() as { port: number }).port, watch);
    server.on('connection', (client) => proxy.pipe(client, connect(target.port, target.host)));
    return proxy;
  }

  arm(): void {
    this.armed = true;
  }

  private pipe(client: Socket, upstream: Socket): void {
    for (const s of [client, upstream]) {
      this.sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => {
        this.sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
    let cutAtReply = false;
    /** Request id of each feed entry insert on this connection -> its index in `inserts`. */
    const asked = new Map<number, number>();
    client.on(
      'data',
      messages((msg) => {
        const insert = this.watch(msg);
        if (insert) {
          asked.set(msg.readInt32LE(4), this.inserts.length);
          this.inserts.push(insert);
          if (this.armed) {
            this.armed = false;
            cutAtReply = true;
          }
        }
        upstream.write(msg);
      }),
    );
    upstream.on(
      'data',
      messages((msg) => {
        const i = asked.get(msg.readInt32LE(8)); // responseTo
        if (cutAtReply) {
          // The server has carried the insert out and answered; the driver gets a closed socket.
          if (i !== undefined) this.answers[i] = 'withheld';
          this.cuts++;
          client.destroy();
          upstream.destroy();
          return;
        }
        if (i !== undefined) this.answers[i] = insertAnswer(msg);
        client.write(msg);
      }),
    );
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise((r) => this.server.close(r));
  }
}

describe('MongoDB feed entry insert cut off before its reply', () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  /** A store through a cutting proxy in front of `server`, a direct client, and a watched model. */
  async function setUp(server: { host: string; port: number }, params: string, watch = feedInsert) {
    const proxy = await CuttingProxy.start(server, watch);
    cleanups.push(() => proxy.close());
    const database = `svc_t_retry_${randomBytes(5).toString('hex')}`;
    const store: Store = await createMongoStore({ url: `mongodb://127.0.0.1:${proxy.port}/${params}`, database });
    cleanups.push(() => store.close());
    const direct = new MongoClient(`mongodb://${server.host}:${server.port}/?directConnection=true`, { serverSelectionTimeoutMS: 5000 });
    cleanups.push(async () => {
      await direct.db(database).dropDatabase();
      await direct.close();
    });
    const model = makeModel();
    const ms: ModelStore = await store.model(model);
    const start = BigInt(await ms.resourceVersion());
    const got: string[] = [];
    const unsub = await ms.watch(String(start), (e) => got.push(`${e.resourceVersion} ${e.type} ${e.object.metadata.name}`));
    cleanups.push(async () => unsub());
    const feed = collectionNames(model.key).feed;
    /** Every entry of the model's feed (position, state, object name), read past the proxy. */
    const entries = async () => {
      const colls = (await direct.db(database).listCollections({}, { nameOnly: true }).toArray())
        .map((c) => c.name)
        .filter((n) => n.startsWith(`${feed}.`));
      const docs = (await Promise.all(colls.map((c) => direct.db(database).collection(c).find({}).toArray()))).flat();
      return docs.map((d) => [String(d._id), d.s as string, d.n as string]).sort((a, b) => a[0]!.localeCompare(b[0]!));
    };
    return { proxy, ms, start, got, entries };
  }

  it('replica set (the driver retries, FerretDB does not deduplicate): the retry takes its own entry; one entry, seen once, the next write at the next position', async () => {
    const ferret = await ownFerret(['--repl-set-name=rs0']);
    cleanups.push(() => ferret.dispose()); // last: the other cleanups still talk to it
    const { port } = new URL(ferret.url('x'));
    // directConnection: otherwise the driver would follow the member's `hosts` past the proxy.
    const { proxy, ms, start, got, entries } = await setUp({ host: '127.0.0.1', port: Number(port) }, '?directConnection=true');
    const p = pad(start + 1n);
    const q = pad(start + 2n);

    proxy.arm();
    await ms.create(widget('a')); // succeeds once
    expect(proxy.cuts).toBe(1);
    // The driver sent the entry's insert again (same position) on a new connection, and
    // FerretDB answered it with a duplicate key (11000): the first attempt's entry is there.
    expect(proxy.inserts.map((i) => i.id)).toEqual([p, p]);
    expect(proxy.answers).toEqual(['withheld', 'error 11000']);

    await ms.create(widget('b'));
    await until(() => got.length >= 2, 10_000);
    expect(got).toEqual([`${start + 1n} ADDED a`, `${start + 2n} ADDED b`]);
    await confirmed();
    expect(await entries()).toEqual([
      [p, 'c', 'a'],
      [q, 'c', 'b'],
    ]);
    expect(await ms.resourceVersion()).toBe(String(start + 2n));
    expect((await ms.list(query())).items.map((o) => o.metadata.name)).toEqual(['a', 'b']);
  }, 60_000);

  it('replica set, an object update cut off before its reply (FerretDB): sent once, in doubt, then seen once; the next write follows', async () => {
    // The driver would retry a replace here; on FerretDB the retry is a second copy that can
    // interleave with newer writes (src/store/mongo/once.ts). Before, the retry also matched
    // nothing (its first copy had run) and the write was reported as a conflict while it had
    // happened, its feed entry aborted.
    const ferret = await ownFerret(['--repl-set-name=rs0']);
    cleanups.push(() => ferret.dispose());
    const { port } = new URL(ferret.url('x'));
    const { proxy, ms, start, got } = await setUp({ host: '127.0.0.1', port: Number(port) }, '?directConnection=true', objectUpdate);
    const a = await ms.create(widget('a', { color: 'red' }));
    proxy.arm();
    await expectStoreError(ms.update(bump(a, { color: 'blue' }), a.metadata.version!), 'Unavailable');
    expect(proxy.cuts).toBe(1);
    expect(proxy.inserts.map((i) => i.id)).toEqual(['a']); // not sent again
    expect(proxy.answers).toEqual(['withheld']);
    // It happened: the writer finds it on the object and confirms its entry; watchers see it once.
    await until(() => got.length >= 2, 15_000);
    expect(got).toEqual([`${start + 1n} ADDED a`, `${start + 2n} MODIFIED a`]);
    const now = (await ms.get('a'))!;
    expect([now.metadata.version, (now.spec as { color?: string }).color]).toEqual([a.metadata.version! + 1, 'blue']);
    // Its marker is released once settled: the next write of the object goes through.
    let next: unknown;
    for (const end = Date.now() + 15_000; !next && Date.now() < end; await new Promise((r) => setTimeout(r, 100))) {
      next = await ms.update(bump(now, { color: 'green' }), now.metadata.version!).catch(() => undefined);
    }
    expect(next).toBeTruthy();
    await until(() => got.length >= 3, 10_000);
    expect(got).toEqual([`${start + 1n} ADDED a`, `${start + 2n} MODIFIED a`, `${start + 3n} MODIFIED a`]);
  }, 60_000);

  it('standalone (the driver does not retry writes): the write fails Unavailable, its entry is aborted, the feed moves on', async (ctx) => {
    const shared = new URL(inject('mongodbUrl'));
    // Only meaningful against a standalone server (npm test's FerretDB): with MONGODB_URL set to
    // a replica set the driver retries (the test above) and would leave the proxy for the hosts
    // the server lists.
    const probe = new MongoClient(shared.href, { serverSelectionTimeoutMS: 5000 });
    try {
      const hello = await probe.db('admin').command({ hello: 1 });
      if (hello.setName || hello.msg === 'isdbgrid') return ctx.skip();
    } finally {
      await probe.close();
    }
    const { proxy, ms, start, got, entries } = await setUp({ host: shared.hostname, port: Number(shared.port) }, '');
    const p = pad(start + 1n);
    const q = pad(start + 2n);

    proxy.arm();
    await expectStoreError(ms.create(widget('a')), 'Unavailable');
    expect(proxy.cuts).toBe(1);
    expect(proxy.inserts.map((i) => i.id)).toEqual([p]); // not retried
    expect(proxy.answers).toEqual(['withheld']);

    await ms.create(widget('b'));
    await until(() => got.length >= 1, 10_000);
    expect(got).toEqual([`${start + 2n} ADDED b`]);
    await confirmed();
    expect(await entries()).toEqual([
      [p, 'a', 'a'],
      [q, 'c', 'b'],
    ]);
    expect(await ms.resourceVersion()).toBe(String(start + 2n));
    expect((await ms.list(query())).items.map((o) => o.metadata.name)).toEqual(['b']);
  }, 60_000);
});

/** Lets the writer's batched entry confirmations (feed.ts, FeedWriter.settle) reach the log. */
const confirmed = () => new Promise((r) => setTimeout(r, 300));
