/**
 * The gateway under test, in its own process: `startGateway` on a free loopback port with the
 * repository's plugins, silent logging, and the store the parent chose. Started by run.ts.
 */
import { destination, pino } from 'pino';
import { startGateway } from '../../src/server.js';
import { childConfig, reportStartError, serveChildProtocol } from './children.js';

export interface GatewayChildConfig {
  dataDir: string;
  mongodbUrl?: string;
  pluginsDir: string;
  adminPassword: string;
  /**
   * Operations switches (bench/lib/ops-bench.ts). Absent: metrics on (the default), no audit
   * log, request log silent. `off`: metrics off too. `on`: metrics, the request log at info
   * into `requestLog` and the audit log into `auditLog`.
   */
  ops?: { mode: 'off' } | { mode: 'on'; auditLog: string; requestLog: string };
}

try {
  const c = childConfig<GatewayChildConfig>();
  const on = c.ops?.mode === 'on' ? c.ops : undefined;
  const logger = on ? pino({ level: 'info' }, destination({ dest: on.requestLog, sync: false })) : undefined;
  const gw = await startGateway({
    port: 0,
    host: '127.0.0.1',
    dataDir: c.dataDir,
    mongodbUrl: c.mongodbUrl,
    pluginsDir: c.pluginsDir,
    adminUsername: 'admin',
    adminPassword: c.adminPassword,
    logLevel: on ? 'info' : 'silent',
    auditLog: on?.auditLog,
  }, { logger, metrics: c.ops?.mode !== 'off' });
  serveChildProtocol(gw.url, () => gw.close());
} catch (e) {
  reportStartError(e);
}
