/**
 * vitest globalSetup: gives every test a MongoDB-compatible server as `inject('mongodbUrl')`.
 *
 * - `MONGODB_URL` set: that server is used as is (tests pick their own database names).
 * - otherwise: FerretDB (SQLite handler) is built once into `.cache/ferretdb` (or taken from
 *   `FERRETDB_BIN`), started on a free loopback port for this run and stopped afterwards.
 *   A failing build or start fails the run with its error; there is no mock fallback.
 */
import type { TestProject } from 'vitest/node';
import { startFerretdb } from '../../scripts/ferretdb.js';

declare module 'vitest' {
  export interface ProvidedContext {
    mongodbUrl: string;
  }
}

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | void> {
  if (process.env.MONGODB_URL) {
    project.provide('mongodbUrl', process.env.MONGODB_URL);
    return;
  }
  const db = await startFerretdb({ database: 'svc_test' });
  project.provide('mongodbUrl', db.url);
  return () => db.stop();
}
