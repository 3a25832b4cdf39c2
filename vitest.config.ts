import { createRequire } from 'node:module';
import { defineConfig } from 'vitest/config';

const require = createRequire(import.meta.url);

export default defineConfig({
  resolve: {
    // graphql 16 ships CJS (`main`) and ESM (`module`). Node resolves dependencies such as
    // @graphql-tools to the CJS build, Vite would give our sources the ESM one: two realms.
    // Point our imports at the same file Node uses.
    alias: [{ find: /^graphql$/, replacement: require.resolve('graphql') }],
  },
  test: {
    include: ['test/**/*.test.ts'],
    // Starts FerretDB (built once from the Go module proxy) unless MONGODB_URL is set.
    // The whole-run secret audit: every response, WebSocket message and gateway log line of the
    // run is scanned for passwords, tokens and hashes (test/setup/secret-audit.ts).
    globalSetup: ['test/setup/ferretdb.ts', 'test/setup/audit.ts'],
    setupFiles: ['test/setup/secret-audit.ts'],
    testTimeout: 30_000,
    hookTimeout: 180_000,
    pool: 'forks',
  },
});
