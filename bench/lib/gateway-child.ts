/**
 * The gateway under test, in its own process: `startGateway` on a free loopback port with the
 * repository's plugins, silent logging, and the store the parent chose. Started by run.ts.
 */
import { startGateway } from '../../src/server.js';
import { childConfig, reportStartError, serveChildProtocol } from './children.js';

export interface GatewayChildConfig {
  dataDir: string;
  mongodbUrl?: string;
  pluginsDir: string;
  adminPassword: string;
}

try {
  const c = childConfig<GatewayChildConfig>();
  const gw = await startGateway({
    port: 0,
    host: '127.0.0.1',
    dataDir: c.dataDir,
    mongodbUrl: c.mongodbUrl,
    pluginsDir: c.pluginsDir,
    adminUsername: 'admin',
    adminPassword: c.adminPassword,
    logLevel: 'silent',
  });
  serveChildProtocol(gw.url, () => gw.close());
} catch (e) {
  reportStartError(e);
}
