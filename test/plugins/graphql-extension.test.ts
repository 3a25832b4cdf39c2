/**
 * Custom GraphQL fields of a plugin (both stores): declared in SDL with `@auth` like generated
 * fields, checked by the same authorizer before the resolver runs, resolved with a client that
 * acts as the caller, gone while the plugin is stopped; a field without `@auth` fails the plugin.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, STORES, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { bind, createRole, createUser } from '../helpers/rbac.js';
import { manifest, plugin, PLUGINS, pluginsDir, waitPhase, type PluginsDir } from './fixtures.js';

const MERGE = { 'content-type': 'application/merge-patch+json' };
const AUTH = '@auth(verb: "list", resource: "things", group: "gq.example.com", version: "v1")';

describe.each(STORES)('plugin GraphQL extensions (%s)', (kind) => {
  let dir: PluginsDir;
  let gw: TestGateway;
  let user: string;
  const gql = async (query: string, authorization?: string) =>
    (await call(gw, 'POST', '/graphql', { query }, authorization ? { authorization } : {})).body;

  beforeAll(async () => {
    dir = await pluginsDir();
    await dir.write('gq', {
      'plugin.yaml': manifest({ name: 'gq', group: 'gq.example.com' }),
      'index.mjs': `export default { graphql: {
        typeDefs: 'extend type Query { gqThingCount(prefix: String): Int! ${AUTH.replace(/"/g, '\\"')} }',
        resolvers: { Query: { gqThingCount: async (_root, args, ctx) =>
          (await ctx.client.list('things', {})).items.filter((t) => t.metadata.name.startsWith(args.prefix ?? '')).length } },
      } };\n`,
    });
    await dir.write('gq-open', {
      'plugin.yaml': manifest({ name: 'gq-open', group: 'gq-open.example.com' }),
      'index.mjs': `export default { graphql: { typeDefs: 'extend type Query { gqOpen: Int }', resolvers: { Query: { gqOpen: () => 1 } } } };\n`,
    });
    gw = await startTestGateway(kind, { pluginsDir: dir.dir });
    for (const name of ['t-a1', 't-a2', 't-b1']) {
      expect((await call(gw, 'POST', '/apis/gq.example.com/v1/things', { metadata: { name }, spec: {} })).status).toBe(201);
    }
    user = await createUser(gw, 'gquser');
  });
  afterAll(async () => {
    await gw?.dispose();
    await dir?.remove();
  });

  it('serves the field to whoever @auth allows, with a client acting as the caller', async () => {
    expect((await gql('{ gqThingCount(prefix: "t-a") }')).data).toEqual({ gqThingCount: 2 });
    const denied = await gql('{ gqThingCount }', user);
    expect(denied.errors[0].extensions.code).toBe('FORBIDDEN');
    expect((await createRole(gw, 'gq-lister', [{ apiGroups: ['gq.example.com'], resources: ['things'], verbs: ['list'] }])).status).toBe(201);
    expect((await bind(gw, 'gquser', 'gq-lister')).status).toBe(201);
    expect((await gql('{ gqThingCount }', user)).data).toEqual({ gqThingCount: 3 });
  });

  it('a field without @auth fails its plugin, naming the file and the field', async () => {
    const p = await plugin(gw, 'gq-open');
    expect(p.status.phase).toBe('FAILED');
    expect(p.status.reason).toContain('index.mjs');
    expect(p.status.reason).toContain('Query.gqOpen must declare @auth');
    expect((await gql('{ gqOpen }')).errors[0].message).toContain('gqOpen');
  });

  it('the field leaves with its plugin and comes back with it', async () => {
    expect((await call(gw, 'PATCH', `${PLUGINS}/gq`, { spec: { enabled: false } }, MERGE)).status).toBe(200);
    await waitPhase(gw, 'gq', 'STOPPED');
    expect((await gql('{ gqThingCount }')).errors[0].message).toContain('gqThingCount');
    expect((await call(gw, 'PATCH', `${PLUGINS}/gq`, { spec: { enabled: true } }, MERGE)).status).toBe(200);
    await waitPhase(gw, 'gq', 'STARTED');
    expect((await gql('{ gqThingCount }')).data).toEqual({ gqThingCount: 3 });
  });
});
