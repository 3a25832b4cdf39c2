/**
 * The raw-driver baseline: a minimal node:http server that answers the benchmark's list URL
 * (and GET by name) by running the same indexed query directly with the driver on the
 * gateway's own database, then returns the same ListResult envelope as JSON. No framework, no
 * validation, no planning: it parses exactly the query shape run.ts sends.
 *
 *  - embedded: the gateway's SQLite file opened read-only with better-sqlite3; table and index
 *    numbers read from svc_models/svc_indexes; COUNT(*) and the page query (side-table
 *    `IN (SELECT …)` filters, ORDER BY the sort column + name) in one read transaction.
 *  - mongodb: `find` with the gateway's filter on `i.<index>`, sort on `s.<index>` + `_id`,
 *    projection `o`, skip/limit, and `countDocuments` of the same filter, in parallel.
 * Both parse the stored JSON text of each object and serialise the envelope, as the gateway does.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { MongoClient, type Document } from 'mongodb';
import { childConfig, reportStartError, serveChildProtocol } from './children.js';

export interface BaselineChildConfig {
  kind: 'embedded' | 'mongodb';
  /** embedded: the gateway's data directory (svc.sqlite inside). */
  dataDir?: string;
  /** mongodb: the gateway's database URL. */
  mongodbUrl?: string;
  /** Storage key of the model, e.g. people.example.com/v1alpha1/persons. */
  modelKey: string;
  /** URL path of the collection, e.g. /apis/people.example.com/v1alpha1/persons. */
  collectionPath: string;
}

interface ListArgs {
  /** [index, value] pairs, ANDed: labels first, then fields (the gateway's order). */
  where: [string, string][];
  /**
   * embedded only, `&plan=selective` (scenario raw-list-opt, informational): drive from the
   * most selective side-table requirement (range counts capped at 1,000) and probe the others
   * with EXISTS, for both COUNT and page. What the gateway's SQL could do (see RESULTS.md).
   */
  selective: boolean;
  sortIndex: string;
  desc: boolean;
  page: number;
  size: number;
}

interface Backend {
  list(a: ListArgs): Promise<{ items: unknown[]; total: number }>;
  get(name: string): Promise<unknown>;
  close(): Promise<void>;
}

/** `k=v` (label) → the metadata.labels index value `k=v`; `field=v` → [field, v]. */
function parseArgs(q: URLSearchParams): ListArgs {
  const where: [string, string][] = [];
  for (const l of q.getAll('labelSelector')) where.push(['metadata.labels', l]);
  for (const f of q.getAll('fieldSelector')) {
    const eq = f.indexOf('=');
    where.push([f.slice(0, eq), f.slice(eq + 1)]);
  }
  const [sortIndex = 'metadata.creationTimestamp', dir = 'asc'] = (q.get('sort') ?? '').split(',');
  return {
    where,
    selective: q.get('plan') === 'selective',
    sortIndex,
    desc: dir === 'desc',
    page: Number(q.get('page') ?? 1),
    size: Number(q.get('size') ?? 20),
  };
}

function openEmbedded(c: BaselineChildConfig): Backend {
  const db = new Database(join(c.dataDir!, 'svc.sqlite'), { readonly: true, fileMustExist: true });
  const slot = db.prepare('SELECT slot FROM svc_models WHERE key = ?').pluck().get(c.modelKey) as number | undefined;
  if (slot === undefined) throw new Error(`model ${c.modelKey} not found in the embedded store`);
  const ks = new Map(
    (db.prepare('SELECT name, k FROM svc_indexes WHERE slot = ?').all(slot) as { name: string; k: number }[]).map((r) => [r.name, r.k]),
  );
  const k = (index: string) => {
    const v = ks.get(index);
    if (v === undefined) throw new Error(`index ${index} not found`);
    return v;
  };
  const o = `o_${slot}`;
  const i = `i_${slot}`;
  const statements = new Map<string, { count: Database.Statement; page: Database.Statement }>();
  const prepared = (a: ListArgs) => {
    const key = `${a.where.map((w) => w[0]).join('|')}|${a.sortIndex}|${a.desc}`;
    let st = statements.get(key);
    if (!st) {
      const where = a.where.map(([index]) => `o.name IN (SELECT name FROM ${i} WHERE k = ${k(index)} AND value IN (?))`).join(' AND ');
      const dir = a.desc ? 'DESC' : 'ASC';
      const order = a.sortIndex === 'metadata.name' ? `o.name ${dir}` : `o.s_${k(a.sortIndex)} ${dir}, o.name ${dir}`;
      st = {
        count: db.prepare(`SELECT COUNT(*) FROM ${o} AS o WHERE ${where}`).pluck(),
        page: db.prepare(`SELECT o.data FROM ${o} AS o WHERE ${where} ORDER BY ${order} LIMIT ? OFFSET ?`).pluck(),
      };
      statements.set(key, st);
    }
    return st;
  };
  // The selective plan: estimate each requirement's matches from its side-table range (capped),
  // drive from the smallest, probe the others per candidate.
  const rangeCount = db.prepare(`SELECT COUNT(*) FROM (SELECT 1 FROM ${i} WHERE k = ? AND value = ? LIMIT 1000)`).pluck();
  const selectiveStatements = new Map<string, { count: Database.Statement; page: Database.Statement }>();
  const selective = (a: ListArgs) => {
    const sizes = a.where.map(([index, value]) => rangeCount.get(k(index), value) as number);
    const order = a.where.map((_, j) => j).sort((x, y) => sizes[x]! - sizes[y]!);
    const key = `${order.map((j) => a.where[j]![0]).join('|')}|${a.sortIndex}|${a.desc}`;
    let st = selectiveStatements.get(key);
    if (!st) {
      const [first, ...rest] = order.map((j) => a.where[j]![0]);
      const probes = rest.map((index) => ` AND EXISTS (SELECT 1 FROM ${i} AS b WHERE b.k = ${k(index)} AND b.value = ? AND b.name = d.name)`).join('');
      const from = `FROM ${i} AS d WHERE d.k = ${k(first!)} AND d.value = ?${probes}`;
      const dir = a.desc ? 'DESC' : 'ASC';
      const orderBy = a.sortIndex === 'metadata.name' ? `o.name ${dir}` : `o.s_${k(a.sortIndex)} ${dir}, o.name ${dir}`;
      st = {
        // One side-table row per (object, value): a single value per requirement counts each object once.
        count: db.prepare(`SELECT COUNT(*) ${from}`).pluck(),
        page: db
          .prepare(`SELECT o.data FROM ${i} AS d CROSS JOIN ${o} AS o ON o.name = d.name WHERE d.k = ${k(first!)} AND d.value = ?${probes} ORDER BY ${orderBy} LIMIT ? OFFSET ?`)
          .pluck(),
      };
      selectiveStatements.set(key, st);
    }
    return { st, values: order.map((j) => a.where[j]![1]) };
  };
  const get = db.prepare(`SELECT data FROM ${o} WHERE name = ?`).pluck();
  const read = db.transaction((a: ListArgs) => {
    let st = prepared(a);
    let values = a.where.map((w) => w[1]);
    if (a.selective) ({ st, values } = selective(a));
    const total = st.count.get(...values) as number;
    const rows = st.page.all(...values, a.size, (a.page - 1) * a.size) as string[];
    return { items: rows.map((r) => JSON.parse(r) as unknown), total };
  });
  return {
    list: async (a) => read.deferred(a),
    get: async (name) => {
      const data = get.get(name) as string | undefined;
      return data === undefined ? undefined : (JSON.parse(data) as unknown);
    },
    close: async () => {
      db.close();
    },
  };
}

/** The gateway's field-name encoding (store/mongo/document.ts `enc`). */
const enc = (index: string) => index.replace(/%/g, '%25').replace(/\./g, '%2E').replace(/\$/g, '%24');

function openMongo(c: BaselineChildConfig): Backend {
  const client = new MongoClient(c.mongodbUrl!, { serverSelectionTimeoutMS: 5000, ignoreUndefined: true });
  const parts = c.modelKey.split('/');
  if (parts[0] === '') parts[0] = 'core';
  const objects = client.db().collection<{ _id: string; o: string }>(`ext.${parts.join('.')}`);
  return {
    async list(a) {
      const conds: Document[] = a.where.map(([index, value]) =>
        index === 'metadata.name' ? { _id: { $in: [value] } } : { [`i.${enc(index)}`]: { $in: [value] } },
      );
      const filter = conds.length === 1 ? conds[0]! : { $and: conds };
      const dir = a.desc ? -1 : 1;
      const sort: Record<string, 1 | -1> = a.sortIndex === 'metadata.name' ? { _id: dir } : { [`s.${enc(a.sortIndex)}`]: dir, _id: dir };
      const [docs, total] = await Promise.all([
        objects
          .find(filter, { projection: { o: 1 } })
          .sort(sort)
          .skip((a.page - 1) * a.size)
          .limit(a.size)
          .toArray(),
        objects.countDocuments(filter),
      ]);
      return { items: docs.map((d) => JSON.parse(d.o) as unknown), total };
    },
    async get(name) {
      const d = await objects.findOne({ _id: name }, { projection: { o: 1 } });
      return d ? (JSON.parse(d.o) as unknown) : undefined;
    },
    close: () => client.close(),
  };
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

try {
  const c = childConfig<BaselineChildConfig>();
  const backend = c.kind === 'embedded' ? openEmbedded(c) : openMongo(c);
  const prefix = `${c.collectionPath}/`;
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://baseline');
    try {
      if (url.pathname === c.collectionPath) {
        const a = parseArgs(url.searchParams);
        const { items, total } = await backend.list(a);
        const totalPages = Math.ceil(total / a.size);
        return send(res, 200, {
          page: a.page,
          size: a.size,
          total,
          totalPages,
          first: a.page === 1,
          last: a.page >= totalPages,
          hasNext: a.page < totalPages,
          hasPrevious: a.page > 1,
          items,
        });
      }
      if (url.pathname.startsWith(prefix)) {
        const obj = await backend.get(decodeURIComponent(url.pathname.slice(prefix.length)));
        return obj === undefined ? send(res, 404, { status: 404 }) : send(res, 200, obj);
      }
      send(res, 404, { status: 404 });
    } catch (e) {
      send(res, 500, { status: 500, detail: (e as Error).message });
    }
  };
  const server = createServer((req, res) => void handle(req, res));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  serveChildProtocol(`http://127.0.0.1:${port}`, async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await backend.close();
  });
} catch (e) {
  reportStartError(e);
}
