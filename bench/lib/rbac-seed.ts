/**
 * RBAC objects for the authorization benchmark (issue 8): 1,000 roles and 10,000 role bindings
 * stored next to the Person objects, a non-admin user whose access comes from those bindings,
 * and a role template aggregated into `anonymous` that makes Person public. Written in the parent
 * process through the operations layer (systemContext: nothing to authorize), before the gateway
 * child starts; the User goes through the User kind's hooks, so its password is stored hashed.
 */
import { performance } from 'node:perf_hooks';
import { userHooks } from '../../src/authentication/user-hooks.js';
import { ApiError } from '../../src/errors/index.js';
import type { Config } from '../../src/config.js';
import { createObject } from '../../src/operations/index.js';
import type { ModelEntry } from '../../src/operations/types.js';
import { systemContext } from '../../src/authorization/system.js';
import { PLATFORM_MODELS, USER } from '../../src/registry/platform.js';
import { Registry } from '../../src/registry/registry.js';
import { openStore } from '../../src/server.js';
import { GROUP, PLURAL } from './dataset.js';

export const BENCH_USER = 'bench-user';
export const BENCH_USER_PASSWORD = 'bench-user-password';
export const RBAC_ROLES = 1000;
export const RBAC_BINDINGS = 10_000;
/** Roles bound to the bench user besides the one granting the read (a realistic resolution). */
const USER_ROLES = 20;

/**
 * A create that outlived the store deadline (503, FerretDB under load) is tried again; 409 on a
 * retry means the earlier attempt was stored after all.
 */
async function createWithRetry(ctx: ReturnType<typeof systemContext>, e: ModelEntry, body: unknown): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await createObject(ctx, e, body);
      return;
    } catch (err) {
      const status = err instanceof ApiError ? err.status : 0;
      if (attempt > 0 && status === 409) return;
      if (status !== 503 || attempt >= 5) throw err;
      await new Promise((r) => setTimeout(r, 200 * (attempt + 1)));
    }
  }
}

export async function seedRbac(config: Config, concurrency: number): Promise<{ seconds: number }> {
  const store = await openStore(config);
  try {
    const registry = new Registry(store);
    for (const { decl, opts } of PLATFORM_MODELS) {
      await registry.register(decl, decl === USER ? { ...opts, hooks: userHooks(async () => {}) } : opts);
    }
    const entry = (plural: string): ModelEntry => registry.find('', 'v1alpha1', plural)!;
    const ctx = systemContext('bench-seed');
    const started = performance.now();
    const bodies: [ModelEntry, unknown][] = [];
    for (let i = 0; i < RBAC_ROLES; i++) {
      bodies.push([
        entry('roles'),
        {
          metadata: { name: `bench-role-${i}`, labels: { 'svc.run/role-template': 'true' }, annotations: i % 10 ? { 'rbac.authorization.svc.run/dependencies': `["bench-role-${i - (i % 10)}"]` } : {} },
          rules: [{ apiGroups: [`g${i}.example.com`], resources: ['things', 'things/status'], verbs: ['get', 'list', 'watch'] }],
        },
      ]);
    }
    bodies.push([
      entry('roles'),
      { metadata: { name: 'bench-read-persons' }, rules: [{ apiGroups: [GROUP], resources: [PLURAL], verbs: ['get', 'list'] }] },
    ]);
    bodies.push([
      entry('roles'),
      {
        metadata: { name: 'people-bench-public-persons', labels: { 'svc.run/role-template': 'true', 'rbac.authorization.svc.run/aggregate-to-anonymous': 'true' } },
        rules: [{ apiGroups: [GROUP], resources: [PLURAL], verbs: ['get'] }],
      },
    ]);
    bodies.push([entry('users'), { metadata: { name: BENCH_USER }, spec: { displayName: 'Bench user', password: BENCH_USER_PASSWORD } }]);
    const binding = (name: string, user: string, role: string) => ({
      metadata: { name },
      roleRef: { apiGroup: '', kind: 'Role', name: role },
      subjects: [{ apiGroup: '', kind: 'User', name: user }],
    });
    bodies.push([entry('rolebindings'), binding('bench-user-read', BENCH_USER, 'bench-read-persons')]);
    for (let i = 0; i < USER_ROLES; i++) bodies.push([entry('rolebindings'), binding(`bench-user-${i}`, BENCH_USER, `bench-role-${i * 37}`)]);
    for (let i = bodies.length; bodies.filter(([e]) => e === entry('rolebindings')).length < RBAC_BINDINGS; i++) {
      bodies.push([entry('rolebindings'), binding(`bench-binding-${i}`, `user-${i % 3000}`, `bench-role-${i % RBAC_ROLES}`)]);
    }
    let next = 0;
    const worker = async () => {
      while (next < bodies.length) {
        const [e, body] = bodies[next++]!;
        await createWithRetry(ctx, e, body);
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, concurrency) }, worker));
    return { seconds: (performance.now() - started) / 1000 };
  } finally {
    await store.close();
  }
}
