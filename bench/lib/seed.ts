/**
 * Seeding in the parent process, through the gateway's own code but without HTTP: the store is
 * opened with `openStore` (the adapter the gateway would pick), the plugins are registered
 * (which opens each model's storage with its indexes), and each Person goes through the
 * operations layer's `createObject` (server-owned metadata, schema validation, then
 * `ModelStore.create`), i.e. exactly what a REST POST stores. Bounded concurrency.
 * The gateway child is not running while this happens (it is started afterwards).
 */
import { performance } from 'node:perf_hooks';
import { pino } from 'pino';
import type { Config } from '../../src/config.js';
import { createObject } from '../../src/operations/index.js';
import type { ModelEntry } from '../../src/operations/types.js';
import { loadPlugins } from '../../src/plugins/loader.js';
import { allowAll, ANONYMOUS } from '../../src/identity/authorizer.js';
import { Registry } from '../../src/registry/registry.js';
import { openStore } from '../../src/server.js';
import { GROUP, personBody, PLURAL, VERSION } from './dataset.js';

export interface SeedResult {
  created: number;
  seconds: number;
}

/** Creates objects `from` … `to - 1`. */
export async function seed(
  config: Config,
  from: number,
  to: number,
  concurrency: number,
  progress: (done: number) => void = () => {},
): Promise<SeedResult> {
  const store = await openStore(config);
  try {
    const registry = new Registry(store);
    await loadPlugins(config.pluginsDir, registry, pino({ level: 'silent' }));
    const entry: ModelEntry | undefined = registry.find(GROUP, VERSION, PLURAL);
    if (!entry) throw new Error(`model ${GROUP}/${VERSION} ${PLURAL} was not registered from ${config.pluginsDir}`);
    const ctx = { caller: ANONYMOUS, authorizer: allowAll };
    const started = performance.now();
    let next = from;
    let done = 0;
    const step = Math.max(1, Math.floor((to - from) / 10));
    const worker = async () => {
      while (next < to) {
        const i = next++;
        await createObject(ctx, entry, personBody(i));
        if (++done % step === 0) progress(from + done);
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, concurrency) }, worker));
    return { created: to - from, seconds: (performance.now() - started) / 1000 };
  } finally {
    await store.close();
  }
}
