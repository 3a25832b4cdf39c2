/**
 * Parse Server 9 as the benchmark's peer, in its own process (started by bench/lib/parse-bench.ts
 * through bench/lib/children.ts, same IPC protocol as the gateway child): REST under /parse and
 * GraphQL under /graphql on a free loopback port, file logging off, the database the parent chose.
 *
 * MongoDB adapter on FerretDB 1.24: Parse's start-up (DatabaseController.performInitialization)
 * creates two indexes that FerretDB rejects, the case-insensitive `_User` username/email indexes
 * (`collation`) and the `_Idempotency` TTL index (`expireAfterSeconds`). This harness skips
 * exactly those index creations (the adapter's ensureIndex for those two classes with those two
 * options) and reports them to the parent; every other index, including the unique ones on
 * `_User`, `_Role` and `_Idempotency`, is created as Parse asks. Neither class is used by the
 * benchmark (requests carry the master key; idempotency is off by default).
 *
 * CommonJS because parse-server is; it resolves from bench/parse/node_modules.
 */
'use strict';
// Before parse-server loads: its default logger (used for start-up deprecation notices) would
// otherwise write files into ./logs.
process.env.PARSE_SERVER_LOGS_FOLDER = 'null';
// Parse 9.10 prints ~15 notices about option defaults that change in a future version; the
// benchmark runs on today's defaults, so they are counted instead of printed.
let deprecations = 0;
for (const stream of [process.stdout, process.stderr]) {
  const write = stream.write.bind(stream);
  stream.write = (chunk, ...rest) => {
    if (String(chunk).includes('DeprecationWarning: The Parse Server option')) {
      deprecations++;
      return true;
    }
    return write(chunk, ...rest);
  };
}
const express = require('express');
const { ParseServer, ParseGraphQLServer, FileSystemAdapter } = require('parse-server');
const MongoStorageAdapter = require('parse-server/lib/Adapters/Storage/Mongo/MongoStorageAdapter').default;

const config = JSON.parse(process.env.SVC_BENCH_CHILD_CONFIG || 'null');
if (!config) {
  console.error('SVC_BENCH_CHILD_CONFIG is not set (this file is started by bench/run.ts)');
  process.exit(1);
}

/** Index creations skipped on FerretDB, for the results. */
const skipped = [];

class FerretdbMongoAdapter extends MongoStorageAdapter {
  ensureIndex(className, schema, fieldNames, indexName, caseInsensitive = false, options = {}) {
    const collation = className === '_User' && caseInsensitive;
    const ttl = className === '_Idempotency' && options && options.ttl !== undefined;
    if (collation || ttl) {
      skipped.push(`${className}.${indexName} (${fieldNames.join(',')}; ${collation ? 'collation' : 'expireAfterSeconds'})`);
      return Promise.resolve();
    }
    return super.ensureIndex(className, schema, fieldNames, indexName, caseInsensitive, options);
  }
}

async function main() {
  const app = express();
  const options = {
    appId: config.appId,
    masterKey: config.masterKey,
    maintenanceKey: config.maintenanceKey,
    serverURL: 'http://127.0.0.1:1/parse', // replaced below once the port is known
    allowCustomObjectId: true,
    logsFolder: null,
    silent: true,
    logLevel: 'error',
    ...(config.kind === 'mongodb'
      ? {
          databaseAdapter: new FerretdbMongoAdapter({ uri: config.databaseURI }),
          // Parse requires an explicit files adapter with an explicit database adapter (no files are stored).
          filesAdapter: new FileSystemAdapter({ filesSubDirectory: 'svc-bench' }),
        }
      : { databaseURI: config.databaseURI }),
  };
  const api = new ParseServer(options);
  await api.start();
  app.use('/parse', api.app);
  const gql = new ParseGraphQLServer(api, { graphQLPath: '/graphql' });
  gql.applyGraphQL(app);
  const server = await new Promise((resolve, reject) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
    s.once('error', reject);
  });
  server.keepAliveTimeout = 65_000;
  const url = `http://127.0.0.1:${server.address().port}`;
  api.config.serverURL = `${url}/parse`;

  let closing = false;
  const shutdown = () => {
    if (closing) return;
    closing = true;
    setTimeout(() => process.exit(1), 8000).unref();
    server.closeAllConnections?.();
    server.close(() => {
      Promise.resolve(api.handleShutdown?.()).then(
        () => process.exit(0),
        () => process.exit(0),
      );
    });
  };
  process.on('message', (m) => {
    if (m && m.type === 'mem') process.send({ type: 'mem', mem: process.memoryUsage() });
    else if (m && m.type === 'stop') shutdown();
  });
  process.on('disconnect', shutdown);
  process.on('SIGTERM', shutdown);
  process.send({ type: 'ready', url, skippedIndexes: skipped, deprecations });
}

main().catch((e) => {
  const message = e && e.stack ? e.stack : String(e);
  if (process.send) process.send({ type: 'error', message }, () => process.exit(1));
  else {
    console.error(message);
    process.exit(1);
  }
});
