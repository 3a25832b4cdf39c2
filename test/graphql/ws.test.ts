/**
 * GraphQL over WebSocket (graphql-ws) on /graphql: subscriptions through the shared watch
 * operation, @auth before a subscription opens, credentials on the upgrade request or in
 * connectionParams.
 */
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { adminAuth, call } from '../helpers/gateway.js';
import { take, useAuthorizedGateway, wsClient } from './helpers.js';

const PERSONS = '/apis/people.example.com/v1alpha1/persons';
const WATCH = /* GraphQL */ `
  subscription ($l: [String!], $rv: String) {
    peopleExampleCom_v1alpha1_watchPersons(labelSelector: $l, resourceVersion: $rv) {
      type
      resourceVersion
      object { metadata { name labels } spec { name age } }
    }
  }`;
const labelled = (name: string, group: string, age = 30) => ({
  metadata: { name, labels: { 'people.example.com/group': group } },
  spec: { name, age },
});

describe('GraphQL over WebSocket', () => {
  const env = useAuthorizedGateway();
  const { authz } = env;

  it('streams ADDED, MODIFIED and DELETED for matching objects', async () => {
    await call(env.gw, 'POST', PERSONS, labelled('w-existing', 'watch'));
    await call(env.gw, 'POST', PERSONS, labelled('w-other', 'elsewhere'));
    const client = wsClient(env.gw);
    try {
      const events = client.iterate({ query: WATCH, variables: { l: ['people.example.com/group=watch'] } });
      const [initial, end] = await take(events, 2);
      expect(initial.data.peopleExampleCom_v1alpha1_watchPersons).toMatchObject({
        type: 'ADDED',
        object: { metadata: { name: 'w-existing' } },
      });
      expect(end.data.peopleExampleCom_v1alpha1_watchPersons).toMatchObject({ type: 'BOOKMARK', object: null });

      await call(env.gw, 'POST', PERSONS, labelled('w-new', 'watch'));
      await call(env.gw, 'PATCH', `${PERSONS}/w-new`, { spec: { age: 31 } }, { 'content-type': 'application/merge-patch+json' });
      await call(env.gw, 'POST', PERSONS, labelled('w-ignored', 'elsewhere'));
      await call(env.gw, 'DELETE', `${PERSONS}/w-new`);
      const changes = (await take(events, 3)).map((r) => r.data.peopleExampleCom_v1alpha1_watchPersons);
      expect(changes.map((e) => [e.type, e.object.metadata.name, e.object.spec.age])).toEqual([
        ['ADDED', 'w-new', 30],
        ['MODIFIED', 'w-new', 31],
        ['DELETED', 'w-new', 31],
      ]);
      expect(new Set(changes.map((e) => e.resourceVersion)).size).toBe(3);
      await events.return?.();
    } finally {
      await client.dispose();
    }
  });

  it('resumes from a list resourceVersion without replaying current objects', async () => {
    await call(env.gw, 'POST', PERSONS, labelled('r-before', 'resume'));
    const list = await call(env.gw, 'GET', `${PERSONS}?labelSelector=people.example.com/group=resume`);
    const client = wsClient(env.gw);
    try {
      const events = client.iterate({ query: WATCH, variables: { l: 'people.example.com/group=resume', rv: list.body.resourceVersion } });
      await new Promise((r) => setTimeout(r, 100));
      await call(env.gw, 'POST', PERSONS, labelled('r-after', 'resume'));
      const [event] = await take(events, 1);
      expect(event.data.peopleExampleCom_v1alpha1_watchPersons).toMatchObject({ type: 'ADDED', object: { metadata: { name: 'r-after' } } });
      await events.return?.();
    } finally {
      await client.dispose();
    }
  });

  it('fails a subscription from an unknown resume point with GONE', async () => {
    const client = wsClient(env.gw);
    try {
      const results = await take(client.iterate({ query: WATCH, variables: { rv: '99999999999' } }), 2, 2000);
      expect(results).toHaveLength(1);
      expect(results[0].errors.map((e: any) => e.extensions.code)).toEqual(['GONE']);
    } finally {
      await client.dispose();
    }
  });

  it('never opens a forbidden subscription', async () => {
    authz.rule = (a) => a.verb !== 'watch';
    const client = wsClient(env.gw, { authorization: adminAuth }); // logged in: FORBIDDEN (anonymous: UNAUTHENTICATED)
    try {
      const events = client.iterate({ query: WATCH });
      const results = await take(events, 5, 2000); // ends after the error
      expect(results).toHaveLength(1);
      expect(results[0].data ?? null).toBeNull();
      expect(results[0].errors.map((e: any) => e.extensions.code)).toEqual(['FORBIDDEN']);
      // only the @auth directive was asked: the watch operation never ran
      expect(authz.calls.map((a) => a.verb)).toEqual(['watch']);
      expect(authz.calls[0]).toMatchObject({ resource: 'persons', apiGroup: 'people.example.com', name: '' });
    } finally {
      await client.dispose();
    }
  });

  it('answers queries and mutations too, as the connectionParams caller', async () => {
    const client = wsClient(env.gw, { authorization: adminAuth });
    try {
      const [me] = await take(client.iterate({ query: '{ me { username } }' }), 1);
      expect(me.data.me.username).toBe('admin');
      const [created] = await take(
        client.iterate({ query: 'mutation { peopleExampleCom_v1alpha1_createPerson(object: { metadata: { name: "via-ws" }, spec: { name: "W" } }) { metadata { name version } } }' }),
        1,
      );
      expect(created.data.peopleExampleCom_v1alpha1_createPerson).toEqual({ metadata: { name: 'via-ws', version: 1 } });
      expect(authz.calls.find((a) => a.verb === 'create')?.caller.username).toBe('admin');
    } finally {
      await client.dispose();
    }
  });

  it('takes the Authorization header of the upgrade request', async () => {
    const client = wsClient(env.gw, undefined, { authorization: adminAuth });
    try {
      const [me] = await take(client.iterate({ query: '{ me { username } }' }), 1);
      expect(me.data.me.username).toBe('admin');
    } finally {
      await client.dispose();
    }
  });

  it('closes the connection with 4401 on wrong connectionParams credentials', async () => {
    const client = wsClient(env.gw, { authorization: `Basic ${Buffer.from('admin:nope').toString('base64')}` });
    try {
      await expect(take(client.iterate({ query: '{ me { username } }' }), 1)).rejects.toMatchObject({ code: 4401 });
    } finally {
      await client.dispose();
    }
  });

  it('refuses the upgrade with 401 on a wrong Authorization header', async () => {
    const ws = new WebSocket(`${env.gw.url.replace('http', 'ws')}/graphql`, 'graphql-transport-ws', {
      headers: { authorization: `Basic ${Buffer.from('admin:nope').toString('base64')}` },
    });
    const status = await new Promise<number>((resolve, reject) => {
      ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.on('open', () => reject(new Error('upgrade accepted')));
      ws.on('error', () => undefined);
    });
    expect(status).toBe(401);
  });

  it('applies the same limits as HTTP', async () => {
    const client = wsClient(env.gw);
    try {
      const aliases = Array.from({ length: 31 }, (_, i) => `a${i}: me { username }`).join(' ');
      await expect(take(client.iterate({ query: `{ ${aliases} }` }), 1)).rejects.toEqual([
        expect.objectContaining({ extensions: expect.objectContaining({ code: 'BAD_REQUEST' }) }),
      ]);
      const tokens = Array.from({ length: 2100 }, () => '__typename').join(' ');
      await expect(take(client.iterate({ query: `{ ${tokens} }` }), 1)).rejects.toEqual([
        expect.objectContaining({ extensions: expect.objectContaining({ code: 'BAD_REQUEST' }) }),
      ]);
    } finally {
      await client.dispose();
    }
  });

  it('reports validation errors without closing the socket', async () => {
    const client = wsClient(env.gw);
    try {
      await expect(take(client.iterate({ query: 'subscription { nope }' }), 1)).rejects.toEqual([
        expect.objectContaining({ message: expect.stringContaining('nope') }),
      ]);
      const [me] = await take(client.iterate({ query: '{ me { username } }' }), 1);
      expect(me.data.me.username).toBe('anonymous');
    } finally {
      await client.dispose();
    }
  });
});
