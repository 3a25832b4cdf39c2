/**
 * A connection's answer dies young. operations/list-page.ts once built pageInfo as an object
 * literal with getters; V8's young-generation GC then kept every page alive until a full GC
 * (rows, keys, cursors: about 1 MB promoted per scavenge under load, and scavenges five times as
 * long), which cost a GraphQL connection a sixth of its CPU. The fixture builds 1,000 pages of
 * 20 objects, reads each as a client does, lets it go, and runs a young GC every 50 pages; it
 * reports the old space's growth. With that literal the old space grew by more than the pages
 * weighed (5.5 to 6.4 MB for 5 MB); now it grows by about 50 KB.
 */
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const here = dirname(fileURLToPath(import.meta.url));

describe('connection results and the young GC', () => {
  it('a page read and let go is collected by the young GC: the old space grows by under a tenth of what the pages weighed', () => {
    const out = execFileSync(process.execPath, ['--expose-gc', '--import', 'tsx', join(here, 'fixtures/connection-garbage.mjs')], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    const { oldSpaceGrowth, pageBytes } = JSON.parse(out.trim().split('\n').at(-1)!) as { oldSpaceGrowth: number; pageBytes: number };
    expect(pageBytes).toBeGreaterThan(4_000_000);
    expect(oldSpaceGrowth).toBeLessThan(pageBytes / 10);
  });
});
