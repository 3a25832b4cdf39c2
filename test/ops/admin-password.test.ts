/**
 * A generated first-admin password is never lost (docs/API.md §10), on both stores: announced
 * during a start that then fails (the port is taken), announced again at every start until it is
 * changed, never served by any API, and forgotten once SVC_ADMIN_PASSWORD replaces it. The
 * printing itself is tested on the real process (./process.test.ts).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { startGateway, StartError } from '../../src/server.js';
import { auditLogger } from '../setup/secret-audit.js';
import { basicAuth, call, freshMongoUrl, STORES } from '../helpers/gateway.js';

const PERMISSIONS = '/apis/api.console.svc.run/v1alpha1/users/-/permissions';

describe.each(STORES)('the generated administrator password (%s)', (kind) => {
  /** A gateway configuration on `port` with its own data dir (and its own MongoDB database). */
  const configFor = (port: number, dataDir: string): Config => ({
    port,
    host: '127.0.0.1',
    dataDir,
    mongodbUrl: kind === 'mongodb' ? freshMongoUrl() : undefined,
    pluginsDir: join(import.meta.dirname, '../../plugins'),
    adminUsername: 'boss',
    logLevel: 'silent',
  });

  it('survives a failed start, is shown until changed, and is never served', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'svc-pw-'));
    const held = createServer();
    await new Promise<void>((r) => held.listen(0, '127.0.0.1', () => r()));
    const heldPort = (held.address() as { port: number }).port;
    const config = configFor(heldPort, dataDir);
    const announced: Array<[string, string, boolean]> = [];
    const options = { logger: auditLogger(), onAdminPassword: (u: string, p: string, now: boolean) => void announced.push([u, p, now]) };
    try {
      // The port is taken: the start fails after the administrator was created, and says where.
      const failed = await startGateway(config, options).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(failed).toBeInstanceOf(StartError);
      expect((failed as Error).message).toBe(`cannot listen on 127.0.0.1:${heldPort}: the address is already in use (EADDRINUSE)`);
      expect(announced).toHaveLength(1);
      const [username, password, generatedNow] = announced[0]!;
      expect([username, generatedNow]).toEqual(['boss', true]);
      expect(password.length).toBeGreaterThanOrEqual(16);

      // The next start announces the same password, which works; no API shows it.
      let gw = await startGateway({ ...config, port: 0 }, options);
      expect(announced[1]).toEqual(['boss', password, false]);
      expect(gw.adminPassword).toBe(password);
      const boss = { authorization: basicAuth('boss', password) };
      expect((await call(gw, 'GET', PERMISSIONS, undefined, boss)).status).toBe(200);
      const everything = await Promise.all(
        ['/api/v1alpha1/users', '/api/v1alpha1/users/boss', '/apis', '/api'].map((p) => call(gw, 'GET', p, undefined, boss)),
      );
      for (const r of everything) expect(JSON.stringify(r.body)).not.toContain(password);

      // Changed through the API: later starts announce nothing.
      const patched = await call(gw, 'PATCH', '/api/v1alpha1/users/boss', { spec: { password: 'changed-by-the-boss' } }, {
        ...boss,
        'content-type': 'application/merge-patch+json',
      });
      expect(patched.status).toBe(200);
      await gw.close();
      gw = await startGateway({ ...config, port: 0 }, options);
      expect(announced).toHaveLength(2);
      expect(gw.adminPassword).toBeUndefined();
      await gw.close();
    } finally {
      await new Promise((r) => held.close(r));
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it('is forgotten once SVC_ADMIN_PASSWORD sets the password', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'svc-pw-'));
    const config = configFor(0, dataDir);
    const announced: string[] = [];
    const options = { logger: auditLogger(), onAdminPassword: (_u: string, p: string) => void announced.push(p) };
    try {
      let gw = await startGateway(config, options);
      expect(announced).toHaveLength(1);
      await gw.close();
      gw = await startGateway({ ...config, adminPassword: 'set-by-the-operator' }, options);
      expect(gw.adminPassword).toBeUndefined();
      await gw.close();
      // Without it again: the old generated password is not shown (it is no longer valid).
      gw = await startGateway(config, options);
      expect(announced).toHaveLength(1);
      expect((await call(gw, 'GET', PERMISSIONS, undefined, { authorization: basicAuth('boss', 'set-by-the-operator') })).status).toBe(200);
      await gw.close();
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
