/**
 * In-process cost of identity and authorization per request (issue 8), measured on the store
 * seeded by rbac-seed.ts (1,000 roles, 10,000 bindings): the gateway's own authenticator and
 * RBAC authorizer, wired as src/server.ts wires them, asked exactly what the pipeline asks for a
 * `GET …/persons/<name>` (authenticate the header → request attributes → authorize), over
 * rotating names, warm caches. Unlike the HTTP throughput ratios this figure does not move with
 * the load of other processes on the machine, so it tells whether a ratio below target comes
 * from the authorization path at all.
 */
import { performance } from 'node:perf_hooks';
import { createAuthenticator } from '../../src/authentication/authenticate.js';
import { SecurityGeneration } from '../../src/authentication/generation.js';
import { LoginLimiter } from '../../src/authentication/login-limiter.js';
import { userHooks } from '../../src/authentication/user-hooks.js';
import { ensureAdmin, ensureBuiltinRoles } from '../../src/bootstrap/roles-and-first-admin.js';
import type { Config } from '../../src/config.js';
import { attributesOf } from '../../src/identity/authorizer.js';
import { loadPlugins } from '../../src/plugins/loader.js';
import { RbacAuthorizer } from '../../src/authorization/rbac-authorizer.js';
import { PLATFORM_MODELS, USER } from '../../src/registry/platform.js';
import { Registry } from '../../src/registry/registry.js';
import { parseRequestInfo } from '../../src/requestinfo/requestinfo.js';
import { openStore } from '../../src/server.js';
import { pino } from 'pino';

export interface MicroResult {
  /** Microseconds per request (median of rounds), by caller. */
  admin: number;
  user: number;
  anonymous: number;
}

export async function measureAuthPath(
  config: Config,
  pluginsDir: string,
  who: { admin: string; user: string },
  paths: string[],
  iterations = 200_000,
  rounds = 5,
): Promise<MicroResult> {
  const store = await openStore(config);
  try {
    const registry = new Registry(store);
    for (const { decl, opts } of PLATFORM_MODELS) {
      await registry.register(decl, decl === USER ? { ...opts, hooks: userHooks(async () => {}) } : opts);
    }
    await ensureBuiltinRoles(registry);
    await loadPlugins(pluginsDir, registry, pino({ level: 'silent' }));
    const generation = await SecurityGeneration.open(undefined);
    const platform = (plural: string) => registry.find('', 'v1alpha1', plural)!.store;
    const rbac = new RbacAuthorizer({
      roles: () => platform('roles'),
      bindings: () => platform('rolebindings'),
      generation,
      pluginOf: (group, version, resource) => registry.find(group, version, resource)?.model.plugin,
    });
    const authenticate = createAuthenticator({
      users: { get: (name) => platform('users').get(name) },
      tokens: { verify: async () => undefined, lookup: async () => undefined },
      generation,
      limiter: new LoginLimiter(),
    });
    const client = { address: '127.0.0.1' };
    const once = async (header: string | undefined, path: string) => {
      const caller = await authenticate(header, client);
      const decision = await rbac.authorize(attributesOf(caller, parseRequestInfo('GET', path, { watch: false })));
      if (!decision.allowed) throw new Error(`the bench's ${caller.username} may not GET ${path}`);
    };
    const run = async (header: string | undefined) => {
      for (let i = 0; i < Math.min(paths.length, 20_000); i++) await once(header, paths[i]!); // warm every cache
      const times: number[] = [];
      for (let r = 0; r < rounds; r++) {
        const t0 = performance.now();
        for (let i = 0; i < iterations; i++) await once(header, paths[i % paths.length]!);
        times.push(((performance.now() - t0) * 1000) / iterations);
      }
      return times.sort((a, b) => a - b)[Math.floor(times.length / 2)]!;
    };
    await ensureAdmin(registry, { username: 'admin', password: who.admin.split(':')[1] });
    const basic = (userPass: string) => `Basic ${Buffer.from(userPass).toString('base64')}`;
    return { admin: await run(basic(who.admin)), user: await run(basic(who.user)), anonymous: await run(undefined) };
  } finally {
    await store.close();
  }
}
