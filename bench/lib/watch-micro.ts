/**
 * In-process cost of watch fan-out per write (issue 10): the gateway's own store, registry and
 * watch operation, N watchers of the Person model opened as the REST watch opens them
 * (`prepareWatch` → `start`), each sink doing what the WebSocket transport does per event before
 * the socket (`encodeWatchEvent`). Writes are creates through the operations layer, one at a
 * time, and the time measured is from the first write until every watcher received the last
 * one (or, when none is selected, until the feed delivered the last change). No HTTP, no
 * WebSocket, no client process: unlike the end-to-end watch bench this figure does not move
 * with the clients competing for the same cores, so it tells what the fan-out itself costs.
 *
 * `tsx bench/lib/watch-micro.ts [watchers=1000] [writes=2000] [store=embedded|mongodb]`
 * (mongodb: MONGODB_URL). Run with `node --cpu-prof --import tsx` to profile.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { pino } from 'pino';
import { resolveLimits } from '../../src/limits.js';
import { WatchHub } from '../../src/watch/hub.js';
import { ensureBuiltinRoles } from '../../src/bootstrap/roles-and-first-admin.js';
import { userCaller } from '../../src/identity/caller.js';
import { userHooks } from '../../src/authentication/user-hooks.js';
import * as ops from '../../src/operations/index.js';
import type { OperationContext } from '../../src/operations/types.js';
import { loadPlugins } from '../../src/plugins/loader.js';
import { allowAll } from '../../src/identity/authorizer.js';
import { PLATFORM_MODELS, USER } from '../../src/registry/platform.js';
import { Registry } from '../../src/registry/registry.js';
import { openStore } from '../../src/server.js';
import { GROUP, PLURAL, VERSION } from './dataset.js';

const LABEL = `${GROUP}/bench`;

export interface WatchMicroResult {
  watchers: number;
  writes: number;
  /** Microseconds per write (write + fan-out to every watcher), by case. */
  none: number;
  all: number;
  /** Same with no watcher at all. */
  base: number;
}

export async function measureFanout(
  opts: { watchers: number; writes: number; mongodbUrl?: string; pluginsDir: string; restricted?: number },
): Promise<WatchMicroResult> {
  process.env.SVC_MAX_WATCHES_PER_USER ??= String(opts.watchers + 100);
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-watch-micro-'));
  const store = await openStore({ dataDir, mongodbUrl: opts.mongodbUrl } as never);
  const keepAlive = setInterval(() => undefined, 1000); // the feed's timers are unref'd
  try {
    const registry = new Registry(store);
    for (const { decl, opts: o } of PLATFORM_MODELS) {
      await registry.register(decl, decl === USER ? { ...o, hooks: userHooks(async () => {}) } : o);
    }
    await ensureBuiltinRoles(registry);
    await loadPlugins(opts.pluginsDir, registry, pino({ level: 'silent' }));
    const entry = registry.find(GROUP, VERSION, PLURAL)!;
    const ctx: OperationContext = { caller: userCaller('admin', 'basic'), authorizer: allowAll, watches: new WatchHub(resolveLimits()) };
    let seq = 0;
    const create = (label: string) =>
      ops.createObject(ctx, entry, { metadata: { name: `m-${seq}`, labels: { [LABEL]: label } }, spec: { name: `m-${seq++}`, age: seq % 100 } });

    let received = 0;
    let lastRv = '';
    let waiter: (() => void) | undefined;
    let target = Infinity;
    const stops: (() => void)[] = [];
    const open = async (n: number) => {
      for (let i = 0; i < n; i++) {
        const p = await ops.prepareWatch(ctx, entry, { labelSelector: [`${LABEL}=watch`], resourceVersion: await entry.store.resourceVersion() });
        stops.push(
          await p.start({
            send: (e) => {
              if (e.type === 'BOOKMARK') return;
              ops.encodeWatchEvent(e);
              received++;
              if (received >= target) waiter?.();
            },
            end: () => undefined,
          }),
        );
      }
    };
    // A probe watcher that selects everything: tells when the feed delivered a change.
    const probe = await ops.prepareWatch(ctx, entry, { resourceVersion: await entry.store.resourceVersion() });
    const stopProbe = await probe.start({ send: (e) => void (lastRv = e.type === "BOOKMARK" ? lastRv : ((e.object as { metadata: { name: string } }).metadata.name)), end: () => undefined });

    const run = async (label: string, expectEach: number): Promise<number> => {
      received = 0;
      const t0 = performance.now();
      let last = '';
      for (let i = 0; i < opts.writes; i++) last = (await create(label)).metadata.name;
      target = opts.writes * expectEach;
      if (expectEach > 0 && received < target) await new Promise<void>((r) => (waiter = r));
      while (lastRv !== last) await new Promise((r) => setImmediate(r));
      waiter = undefined;
      target = Infinity;
      return ((performance.now() - t0) * 1000) / opts.writes;
    };
    await run('quiet', 0); // warm-up
    const base = await run('quiet', 0);
    await open(opts.watchers);
    await run('quiet', 0); // warm-up with watchers
    const none = await run('quiet', 0);
    const all = await run('watch', opts.watchers);
    for (const s of stops) s();
    stopProbe();
    return { watchers: opts.watchers, writes: opts.writes, none, all, base };
  } finally {
    clearInterval(keepAlive);
    await store.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [w, n, kind] = process.argv.slice(2);
  const pluginsDir = fileURLToPath(new URL('../../plugins', import.meta.url));
  const r = await measureFanout({
    watchers: Number(w ?? 1000),
    writes: Number(n ?? 2000),
    pluginsDir,
    mongodbUrl: kind === 'mongodb' ? process.env.MONGODB_URL : undefined,
  });
  console.log(
    `${r.watchers} watchers, ${r.writes} writes: no watcher ${r.base.toFixed(0)} µs/write; ` +
      `selecting none ${r.none.toFixed(0)} µs/write (+${(r.none - r.base).toFixed(0)}); ` +
      `receiving every write ${r.all.toFixed(0)} µs/write (+${(r.all - r.base).toFixed(0)}, ${((r.all - r.base) / r.watchers).toFixed(2)} µs per delivery)`,
  );
  process.exit(0);
}
