/**
 * Starts a real gateway on a free loopback port for integration tests, on either store:
 * `embedded` (a fresh temp data dir) or `mongodb` (a fresh database on the FerretDB/MongoDB
 * server provided by test/setup/ferretdb.ts).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import type { Config } from '../../src/config.js';
import { startGateway, type Gateway, type GatewayOptions } from '../../src/server.js';
import { auditLogger } from '../setup/secret-audit.js';

export const TEST_PASSWORD_COST = { N: 2 ** 14, r: 8, p: 1 };

export type StoreKind = 'embedded' | 'mongodb';
export const STORES: StoreKind[] = ['embedded', 'mongodb'];

export const ADMIN = { username: 'admin', password: 'test-admin-password' };
export const adminAuth = `Basic ${Buffer.from(`${ADMIN.username}:${ADMIN.password}`).toString('base64')}`;

export interface TestGateway extends Gateway {
  dataDir: string;
  mongodbUrl?: string;
  /** Restarts on the same data (same dir or database). */
  restart(): Promise<TestGateway>;
  dispose(): Promise<void>;
}

/** A MongoDB URL with a database of its own. */
export function freshMongoUrl(): string {
  const base = new URL(inject('mongodbUrl'));
  base.pathname = `/svc_${randomBytes(5).toString('hex')}`;
  return base.toString();
}

export async function startTestGateway(
  kind: StoreKind,
  opts: { pluginsDir?: string; dataDir?: string; mongodbUrl?: string; config?: Partial<Config>; corsOrigins?: string[] } & GatewayOptions = {},
): Promise<TestGateway> {
  const dataDir = opts.dataDir ?? (await mkdtemp(join(tmpdir(), 'svc-gw-')));
  const mongodbUrl = kind === 'mongodb' ? (opts.mongodbUrl ?? freshMongoUrl()) : undefined;
  const config: Config = {
    port: 0,
    host: '127.0.0.1',
    dataDir,
    mongodbUrl,
    pluginsDir: opts.pluginsDir ?? join(import.meta.dirname, '../../plugins'),
    adminUsername: ADMIN.username,
    adminPassword: ADMIN.password,
    logLevel: 'silent',
    ...(opts.corsOrigins ? { corsOrigins: opts.corsOrigins } : {}),
    ...opts.config,
  };
  // Every line the gateway logs, at the most verbose level, goes through the secret audit.
  // Passwords at scrypt N=2^14 (an eighth of the production cost) unless a test asks for another:
  // suites create many users; test/authentication/password-cost.test.ts checks the production cost.
  const gw = await startGateway(config, { logger: auditLogger(), passwordCost: TEST_PASSWORD_COST, ...opts });
  const self: TestGateway = Object.assign(gw, {
    dataDir,
    mongodbUrl,
    async restart() {
      await gw.close();
      return startTestGateway(kind, { ...opts, dataDir, mongodbUrl });
    },
    async dispose() {
      await gw.close();
      if (!opts.dataDir) await rm(dataDir, { recursive: true, force: true });
    },
  });
  return self;
}

/** Pass as `headers` (or spread into them) to call without credentials, as `anonymous`. */
export const ANONYMOUSLY: Readonly<Record<string, string>> = Object.freeze({ authorization: '' });

export const basicAuth = (username: string, password: string) => `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;

/**
 * fetch + JSON, returning status, headers and parsed body. Sends the test administrator's
 * credentials unless `headers.authorization` says otherwise (`''`, see ANONYMOUSLY: none).
 */
export async function call(
  gw: { url: string },
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; body: any }> {
  const all: Record<string, string> = { authorization: adminAuth, ...headers };
  if (all.authorization === '') delete all.authorization;
  const init: RequestInit = { method, headers: all };
  if (body !== undefined) {
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
    (init.headers as Record<string, string>)['content-type'] ??= 'application/json';
  }
  const res = await fetch(gw.url + path, init);
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // leave as text
  }
  return { status: res.status, headers: res.headers, body: parsed };
}
