/**
 * Configuration (docs/API.md §1, §10 "Command line"): flags win over variables, every bad flag or
 * value is a ConfigError with one line, --help lists every option, store addresses never carry
 * credentials. The process-level exit codes are in ./process.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, helpText, loadConfig, OPTIONS, storeAddress, wantsHelp } from '../../src/config.js';

describe('loadConfig', () => {
  it('reads defaults, variables, and flags over variables', () => {
    expect(loadConfig([], {})).toEqual({
      port: 8090,
      host: '127.0.0.1',
      dataDir: './data',
      mongodbUrl: undefined,
      pluginsDir: './plugins',
      adminUsername: 'admin',
      adminPassword: undefined,
      logLevel: 'info',
      auditLog: undefined,
      auditPolicy: undefined,
      corsOrigins: [],
    });
    const env = { PORT: '1234', HOST: '0.0.0.0', SVC_DATA_DIR: '/d', LOG_LEVEL: 'debug', SVC_ADMIN_USERNAME: 'root', SVC_ADMIN_PASSWORD: 'pw-from-env' };
    expect(loadConfig([], env)).toMatchObject({ port: 1234, host: '0.0.0.0', dataDir: '/d', logLevel: 'debug', adminUsername: 'root', adminPassword: 'pw-from-env' });
    expect(loadConfig(['--port', '99', '--data-dir=/flag', '--mongodb-url', 'mongodb://h:1/db'], env)).toMatchObject({
      port: 99,
      dataDir: '/flag',
      mongodbUrl: 'mongodb://h:1/db',
    });
    expect(loadConfig([], { MONGODB_URL: '' }).mongodbUrl).toBeUndefined();
  });

  it.each([
    [['--nope'], {}, 'unknown option --nope (see --help)'],
    [['--port', 'abc'], {}, 'invalid --port "abc": a port is a whole number from 0 to 65535'],
    [['--port', '70000'], {}, 'invalid --port "70000": a port is a whole number from 0 to 65535'],
    [['--port', '-1'], {}, undefined],
    [['--port', '1.5'], {}, 'invalid --port "1.5": a port is a whole number from 0 to 65535'],
    [[], { PORT: 'x1' }, 'invalid PORT "x1": a port is a whole number from 0 to 65535'],
    [['x'], {}, 'unexpected argument x (see --help)'],
    [['--log-level', 'chatty'], {}, undefined],
    [['--mongodb-url', 'http://h'], {}, 'invalid --mongodb-url: expected mongodb://host:port/dbname'],
    [[], { SVC_STORE_TIMEOUT_MS: 'soon' }, 'invalid SVC_STORE_TIMEOUT_MS "soon": a positive whole number'],
    [[], { SVC_CORS_ORIGINS: 'not an origin' }, undefined],
  ] as Array<[string[], Record<string, string>, string | undefined]>)('%j %j is refused in one line', (argv, env, message) => {
    let error: unknown;
    try {
      loadConfig(argv, env);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const text = (error as Error).message;
    expect(text).not.toContain('\n');
    if (message) expect(text).toBe(message);
  });

  it('help lists every option with its variable and default', () => {
    const text = helpText();
    for (const o of OPTIONS) {
      const line = text.split('\n').find((l) => l.includes(`--${o.flag} `))!;
      expect(line).toContain(o.env);
      if (o.default) expect(line).toContain(`(default: ${o.default})`);
    }
    expect(wantsHelp(['--port', '1', '--help'])).toBe(true);
    expect(wantsHelp(['-h'])).toBe(true);
    expect(wantsHelp(['--', '--help'])).toBe(false);
  });

  it('names a MongoDB store by host:port only', () => {
    expect(storeAddress({ dataDir: './d', mongodbUrl: 'mongodb://user:s3cret-value@db.example:27018,db2/app?tls=true' })).toBe(
      'db.example:27018,db2:27017',
    );
    expect(storeAddress({ dataDir: './d', mongodbUrl: 'mongodb+srv://u:p@cluster.example/app' })).toBe('cluster.example');
    expect(storeAddress({ dataDir: './d' })).toBe('./d');
  });
});
