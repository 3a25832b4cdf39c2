/**
 * The schema follows the registry: a model registered at runtime gets its fields at once,
 * requests already running finish on the schema they started with, clashing models are
 * refused at registration, and unregistered models disappear.
 */
import { describe, expect, it } from 'vitest';
import { codes, gql, useAuthorizedGateway } from './helpers.js';

const GADGET = {
  group: 'runtime.example.com',
  version: 'v1',
  kind: 'Gadget',
  schema: { properties: { spec: { type: 'object', properties: { size: { type: 'integer' } } } } },
};

describe('schema swap', () => {
  const env = useAuthorizedGateway();
  const { authz } = env;

  it('serves a model registered at runtime and drops it when unregistered', async () => {
    const before = await gql(env.gw, '{ runtimeExampleCom_v1_gadgets { total } }');
    expect(before.status).toBe(400);

    await env.gw.registry.register(GADGET, { plugin: 'runtime' });
    const created = await gql(env.gw, 'mutation { runtimeExampleCom_v1_createGadget(object: { metadata: { name: "g1" }, spec: { size: 3 } }) { spec { size } } }');
    expect(created.body).toEqual({ data: { runtimeExampleCom_v1_createGadget: { spec: { size: 3 } } } });
    const listed = await gql(env.gw, '{ runtimeExampleCom_v1_gadgets { total items { metadata { name } } } }');
    expect(listed.body.data.runtimeExampleCom_v1_gadgets).toEqual({ total: 1, items: [{ metadata: { name: 'g1' } }] });

    expect(env.gw.registry.unregister('runtime.example.com', 'v1', 'gadgets')).toBe(true);
    const after = await gql(env.gw, '{ runtimeExampleCom_v1_gadgets { total } }');
    expect(after.status).toBe(400);
    expect(codes(after)).toEqual(['GRAPHQL_VALIDATION_FAILED']);
    // the rest of the schema is untouched
    expect((await gql(env.gw, '{ peopleExampleCom_v1alpha1_persons { total } }')).body.errors).toBeUndefined();
  });

  it('lets a request in flight finish on the schema it started with', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    authz.rule = () => true;
    const original = authz.authorize.bind(authz);
    let held = false;
    authz.authorize = async (attrs) => {
      if (!held && attrs.resource === 'persons' && attrs.verb === 'list') {
        held = true;
        await gate;
      }
      return original(attrs);
    };
    try {
      const inFlight = gql(env.gw, '{ peopleExampleCom_v1alpha1_persons { total } }');
      while (!held) await new Promise((r) => setTimeout(r, 5));
      await env.gw.registry.register({ ...GADGET, kind: 'Widget' }, { plugin: 'runtime' });
      const fresh = await gql(env.gw, '{ runtimeExampleCom_v1_widgets { total } }');
      expect(fresh.body).toEqual({ data: { runtimeExampleCom_v1_widgets: { total: 0 } } });
      release();
      const done = await inFlight;
      expect(done.body.errors).toBeUndefined();
      expect(done.body.data.peopleExampleCom_v1alpha1_persons.total).toEqual(expect.any(Number));
    } finally {
      authz.authorize = original;
      release();
    }
  });

  it('refuses a model whose GraphQL names clash with a registered one', async () => {
    await expect(
      env.gw.registry.register({ ...GADGET, group: 'runtime-example.com', kind: 'Widget' }, { plugin: 'clash' }),
    ).rejects.toThrow(/would both define GraphQL/);
    // nothing changed
    expect(env.gw.registry.find('runtime-example.com', 'v1', 'widgets')).toBeUndefined();
    expect((await gql(env.gw, '{ runtimeExampleCom_v1_widgets { total } }')).body.errors).toBeUndefined();
  });
});
