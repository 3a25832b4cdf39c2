/**
 * Configuration from the environment and command-line flags (flags win). CONTRACT §1.
 *   PORT / --port (8090), HOST / --host (127.0.0.1), SVC_DATA_DIR / --data-dir (./data),
 *   MONGODB_URL / --mongodb-url (selects MongoDB), SVC_PLUGINS_DIR / --plugins-dir (./plugins),
 *   SVC_ADMIN_USERNAME (admin), SVC_ADMIN_PASSWORD, LOG_LEVEL (info),
 *   SVC_CORS_ORIGINS (comma-separated origins allowed by CORS; none by default),
 *   SVC_AUDIT_LOG (unset: no audit log; `-`: stdout), SVC_AUDIT_POLICY (unset: every audited request at Metadata).
 */
import { parseArgs } from 'node:util';
import { parseCorsOrigins } from './http/browser.js';

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  mongodbUrl?: string;
  pluginsDir: string;
  adminUsername: string;
  adminPassword?: string;
  logLevel: string;
  /** Origins allowed by CORS (SVC_CORS_ORIGINS); none when empty or unset. */
  corsOrigins?: string[];
  /** SVC_AUDIT_LOG: the audit log file (`-`: stdout); unset: no audit log (CONTRACT §10). */
  auditLog?: string;
  /** SVC_AUDIT_POLICY: a YAML audit policy (levels None and Metadata per resource). */
  auditPolicy?: string;
}

export function loadConfig(argv: string[] = process.argv.slice(2), env: NodeJS.ProcessEnv = process.env): Config {
  const { values } = parseArgs({
    args: argv,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      'data-dir': { type: 'string' },
      'mongodb-url': { type: 'string' },
      'plugins-dir': { type: 'string' },
      'log-level': { type: 'string' },
    },
    strict: true,
  });
  const portText = values.port ?? env.PORT ?? '8090';
  const port = Number(portText);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`invalid port "${portText}"`);
  return {
    port,
    host: values.host ?? env.HOST ?? '127.0.0.1',
    dataDir: values['data-dir'] ?? env.SVC_DATA_DIR ?? './data',
    mongodbUrl: values['mongodb-url'] ?? (env.MONGODB_URL || undefined),
    pluginsDir: values['plugins-dir'] ?? env.SVC_PLUGINS_DIR ?? './plugins',
    adminUsername: env.SVC_ADMIN_USERNAME || 'admin',
    adminPassword: env.SVC_ADMIN_PASSWORD || undefined,
    logLevel: values['log-level'] ?? env.LOG_LEVEL ?? 'info',
    corsOrigins: parseCorsOrigins(env.SVC_CORS_ORIGINS),
    auditLog: env.SVC_AUDIT_LOG || undefined,
    auditPolicy: env.SVC_AUDIT_POLICY || undefined,
  };
}
