import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Starts FerretDB (built once from the Go module proxy) unless MONGODB_URL is set.
    globalSetup: ['test/setup/ferretdb.ts'],
    testTimeout: 30_000,
    hookTimeout: 180_000,
    pool: 'forks',
  },
});
