/**
 * How a list is sent to the MongoDB store's server (query.ts runList), counted with the driver's
 * command monitoring. On FerretDB every filter is a scan of the whole collection, so a page of a
 * selective query is read with the objects after it and its total comes from the same command;
 * the count follows only when the matches go on past that window. On MongoDB a page is a find
 * and a count (two index scans). Either way the page and the total are those of the query.
 */
import { randomBytes } from 'node:crypto';
import { MongoClient, type CommandStartedEvent } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { makeModel, names, query, req, widget } from './contract.js';
import { createMongoStore } from '../../src/store/mongo/index.js';
import { collectionNames } from '../../src/store/mongo/document.js';
import { SCAN_SPARE } from '../../src/store/mongo/query.js';
import type { ModelStore, Store } from '../../src/store/types.js';

const url = inject('mongodbUrl');

describe('mongodb list commands', () => {
  const database = `svc_t_${randomBytes(5).toString('hex')}`;
  const seen: CommandStartedEvent[] = [];
  let store: Store;
  let ms: ModelStore;
  let coll: string;
  let isFerret = false;
  const N = 2 * SCAN_SPARE;

  beforeAll(async () => {
    store = await createMongoStore({ url, database, onCommand: (e) => seen.push(e) });
    const model = makeModel();
    coll = collectionNames(model.key).objects;
    ms = await store.model(model);
    // N objects: every third is blue, the rest red; `rare` tags five of them.
    const client = await MongoClient.connect(url);
    try {
      isFerret = typeof (await client.db(database).command({ buildInfo: 1 })).ferretdbVersion === 'string';
    } finally {
      await client.close();
    }
    for (let i = 0; i < N; i++) {
      await ms.create(widget(`w-${String(i).padStart(4, '0')}`, { color: i % 3 ? 'red' : 'blue', tags: i % 90 === 1 ? ['rare'] : ['common'] }));
    }
  }, 120_000);
  afterAll(async () => {
    await store?.close();
    const client = await MongoClient.connect(url);
    await client.db(database).dropDatabase();
    await client.close();
  });

  const onObjects = async (fn: () => Promise<unknown>) => {
    const from = seen.length;
    await fn();
    return seen.slice(from).filter((e) => e.command[e.commandName] === coll || (e.commandName === 'aggregate' && e.command.aggregate === coll));
  };
  const byName = [{ index: 'metadata.name', direction: 'asc' as const }];

  it('a page of a selective query and its total: one command on FerretDB, find + count on MongoDB', async () => {
    let page;
    const cmds = await onObjects(async () => (page = await ms.list(query([req('spec.tags', 'in', ['rare'])], byName, 0, 2))));
    expect(page!.total).toBe(5);
    expect(names(page!)).toEqual(['w-0001', 'w-0091']);
    expect(cmds.map((c) => c.commandName)).toEqual(isFerret ? ['find'] : expect.arrayContaining(['find', 'aggregate']));
    // The last page, and a page past the end.
    const last = await ms.list(query([req('spec.tags', 'in', ['rare'])], byName, 4, 2));
    expect([last.total, names(last)]).toEqual([5, ['w-0361']]);
    const past = await ms.list(query([req('spec.tags', 'in', ['rare'])], byName, 6, 2));
    expect([past.total, names(past)]).toEqual([5, []]);
  });

  it('matches beyond the window are counted: the total stays exact', async () => {
    const red = Array.from({ length: N }, (_, i) => i).filter((i) => i % 3).map((i) => `w-${String(i).padStart(4, '0')}`);
    expect(red.length).toBeGreaterThan(20 + SCAN_SPARE);
    let page;
    const cmds = await onObjects(async () => (page = await ms.list(query([req('spec.color', 'in', ['red'])], byName, 20, 20))));
    expect(page!.total).toBe(red.length);
    expect(names(page!)).toEqual(red.slice(20, 40));
    expect(cmds).toHaveLength(2);
    // At the window's edge: a window the matches fill is counted, one more and it holds them all.
    for (const [limit, commands] of [[red.length - SCAN_SPARE, 2], [red.length - SCAN_SPARE + 1, 1]] as const) {
      const edge = await onObjects(async () => (page = await ms.list(query([req('spec.color', 'in', ['red'])], byName, 0, limit))));
      expect(page!.total).toBe(red.length);
      expect(names(page!)).toEqual(red.slice(0, limit));
      expect(edge).toHaveLength(isFerret ? commands : 2);
    }
  });
});
