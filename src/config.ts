/**
 * Configuration from the environment and command-line flags (flags win). docs/API.md §1, §10.
 * OPTIONS is the one table of flags: parsing, validation and `--help` all read it; ENV_ONLY lists
 * what only the environment sets. A bad flag or value throws ConfigError (the CLI exits 2).
 */
import { parseArgs } from 'node:util';
import { parseCorsOrigins } from './transport/browser.js';
import { LIMIT_ENV, LIMITS } from './limits.js';

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
  /** SVC_AUDIT_LOG: the audit log file (`-`: stdout); unset: no audit log (docs/API.md §10). */
  auditLog?: string;
  /** SVC_AUDIT_POLICY: a YAML audit policy (levels None and Metadata per resource). */
  auditPolicy?: string;
  /** SVC_GRAPHQL_OPERATIONS: a JSON file from hash to document; only those GraphQL operations run (docs/API.md §13). */
  graphqlOperations?: string;
}

/** A flag or value the gateway cannot start with; its message is one line for the operator. */
export class ConfigError extends Error {}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

interface OptionSpec {
  flag: string;
  env: string;
  value: string;
  default?: string;
  help: string;
}

export const OPTIONS: readonly OptionSpec[] = [
  { flag: 'port', env: 'PORT', value: '<port>', default: '8090', help: 'listen port (0: any free port)' },
  { flag: 'host', env: 'HOST', value: '<address>', default: '127.0.0.1', help: 'listen address (0.0.0.0 or :: for every interface)' },
  { flag: 'data-dir', env: 'SVC_DATA_DIR', value: '<dir>', default: './data', help: 'directory of the embedded store' },
  { flag: 'mongodb-url', env: 'MONGODB_URL', value: '<url>', help: 'mongodb://host:port/dbname selects the MongoDB store (default: embedded)' },
  { flag: 'plugins-dir', env: 'SVC_PLUGINS_DIR', value: '<dir>', default: './plugins', help: 'where plugins are loaded from' },
  { flag: 'log-level', env: 'LOG_LEVEL', value: '<level>', default: 'info', help: `log level: ${LOG_LEVELS.join(', ')}` },
];

/** Settings read from the environment only: [variable, default, meaning]. */
export const ENV_ONLY: ReadonlyArray<readonly [string, string, string]> = [
  ['SVC_ADMIN_USERNAME', 'admin', 'the first administrator'],
  ['SVC_ADMIN_PASSWORD', 'generated', 'its password; a generated one is printed at every start until it is changed'],
  ['SVC_AUDIT_LOG', 'unset: no audit log', 'audit log file, - for stdout'],
  ['SVC_AUDIT_POLICY', 'unset: Metadata for every audited request', 'YAML audit policy (levels None and Metadata per resource)'],
  ['SVC_CORS_ORIGINS', 'unset: CORS off', 'comma-separated origins allowed by CORS'],
  ['SVC_GRAPHQL_OPERATIONS', 'unset: any operation', 'JSON file from hash to document: only these GraphQL operations run'],
  ['OTEL_EXPORTER_OTLP_ENDPOINT', 'unset: no tracing', 'OTLP/HTTP endpoint traces are exported to (README "Traces")'],
  ...(Object.entries(LIMIT_ENV) as Array<[keyof typeof LIMITS, string]>).map(
    ([key, name]) => [name, String(LIMITS[key]), 'limit, see README "Limits"'] as const,
  ),
  // Defaults of store/feed/change-log.ts DEFAULT_RETENTION.
  ['SVC_FEED_RETENTION_EVENTS', '100000', 'watch history kept per model, in events'],
  ['SVC_FEED_RETENTION_SECONDS', '86400', 'watch history kept per model, in seconds'],
];

export function helpText(): string {
  const width = Math.max(...OPTIONS.map((o) => `--${o.flag} ${o.value}`.length), '-h, --help'.length) + 2;
  const envWidth = Math.max(...OPTIONS.map((o) => o.env.length)) + 2;
  const onlyWidth = Math.max(...ENV_ONLY.map(([name]) => name.length)) + 2;
  const lines = [
    'Usage: node dist/cli.js [options]        (or: npm start -- [options])',
    '',
    'Serves the svc gateway: REST, GraphQL and watch APIs over plugin-declared models.',
    '',
    'Options (a flag wins over its environment variable):',
    ...OPTIONS.map(
      (o) => `  ${`--${o.flag} ${o.value}`.padEnd(width)}${o.env.padEnd(envWidth)}${o.help}${o.default !== undefined ? ` (default: ${o.default})` : ''}`,
    ),
    `  ${'-h, --help'.padEnd(width)}${''.padEnd(envWidth)}print this help and exit`,
    '',
    'Environment only:',
    ...ENV_ONLY.map(([name, def, help]) => `  ${name.padEnd(onlyWidth)}${help} (default: ${def})`),
    '',
    'SIGTERM or SIGINT stops gracefully (watches end, requests in flight get 10 s); a second one stops at once.',
    'Exit codes: 0 stopped, 1 failed to start, 2 bad option or value.',
  ];
  return `${lines.join('\n')}\n`;
}

/** True when the command line asks for help (checked before anything else is parsed). */
export function wantsHelp(argv: string[] = process.argv.slice(2)): boolean {
  const end = argv.indexOf('--');
  return (end < 0 ? argv : argv.slice(0, end)).some((a) => a === '--help' || a === '-h');
}

/** parseArgs' messages are long; say the same in one short line. */
function argumentError(e: unknown): ConfigError {
  const err = e as { code?: string; message?: string };
  const quoted = /'([^']+)'/.exec(err.message ?? '')?.[1];
  switch (err.code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return new ConfigError(`unknown option ${quoted ?? ''} (see --help)`);
    case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
      return new ConfigError(`unexpected argument ${quoted ?? ''} (see --help)`);
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE':
      return new ConfigError(`${(err.message ?? 'invalid option value').split('\n')[0]} (see --help)`);
    default:
      return new ConfigError(`${(err.message ?? String(e)).split('\n')[0]} (see --help)`);
  }
}

export function loadConfig(argv: string[] = process.argv.slice(2), env: NodeJS.ProcessEnv = process.env): Config {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        ...Object.fromEntries(OPTIONS.map((o) => [o.flag, { type: 'string' as const }])),
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (e) {
    throw argumentError(e);
  }
  /** The flag's value, else the variable's; named as the operator wrote it, for messages. */
  const setting = (flag: string): { text?: string; from: string } => {
    const spec = OPTIONS.find((o) => o.flag === flag)!;
    const v = values[flag];
    if (typeof v === 'string') return { text: v, from: `--${flag}` };
    const e = env[spec.env];
    return { text: e === '' ? undefined : e, from: spec.env };
  };

  const portSetting = setting('port');
  const portText = portSetting.text ?? '8090';
  const port = /^\d+$/.test(portText.trim()) ? Number(portText) : NaN;
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new ConfigError(`invalid ${portSetting.from} "${portText}": a port is a whole number from 0 to 65535`);
  }
  const logSetting = setting('log-level');
  const logLevel = logSetting.text ?? 'info';
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError(`invalid ${logSetting.from} "${logLevel}": one of ${LOG_LEVELS.join(', ')}`);
  const urlSetting = setting('mongodb-url');
  const mongodbUrl = urlSetting.text;
  if (mongodbUrl !== undefined && !/^mongodb(\+srv)?:\/\/[^/?#]+/.test(mongodbUrl)) {
    throw new ConfigError(`invalid ${urlSetting.from}: expected mongodb://host:port/dbname`);
  }
  const host = setting('host').text ?? '127.0.0.1';
  for (const name of Object.values(LIMIT_ENV)) {
    const raw = env[name];
    if (raw === undefined || raw === '') continue;
    const n = Number(raw);
    if (!Number.isSafeInteger(n) || n < 1) throw new ConfigError(`invalid ${name} "${raw}": a positive whole number`);
  }
  let corsOrigins: string[];
  try {
    corsOrigins = parseCorsOrigins(env.SVC_CORS_ORIGINS);
  } catch (e) {
    throw new ConfigError(`invalid ${(e as Error).message}`);
  }
  return {
    port,
    host,
    dataDir: setting('data-dir').text ?? './data',
    mongodbUrl,
    pluginsDir: setting('plugins-dir').text ?? './plugins',
    adminUsername: env.SVC_ADMIN_USERNAME || 'admin',
    adminPassword: env.SVC_ADMIN_PASSWORD || undefined,
    logLevel,
    auditLog: env.SVC_AUDIT_LOG || undefined,
    auditPolicy: env.SVC_AUDIT_POLICY || undefined,
    graphqlOperations: env.SVC_GRAPHQL_OPERATIONS || undefined,
    corsOrigins,
  };
}

/**
 * Where the store lives, for messages: `host:port[,host:port…]` of a MongoDB URL (never its
 * credentials or options), or the embedded store's directory.
 */
export function storeAddress(config: Pick<Config, 'mongodbUrl' | 'dataDir'>): string {
  if (!config.mongodbUrl) return config.dataDir;
  const m = /^mongodb(\+srv)?:\/\/(?:[^@/]*@)?([^/?#]+)/.exec(config.mongodbUrl);
  const hosts = m?.[2] ?? 'an unparsable URL';
  return m?.[1] ? hosts : hosts.split(',').map((h) => (/:\d+$/.test(h) ? h : `${h}:27017`)).join(',');
}
