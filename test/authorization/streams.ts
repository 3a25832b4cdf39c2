/**
 * Open watch streams as a given caller on every transport (REST WebSocket, REST ndjson,
 * graphql-ws), collecting what arrives, for the revocation tests.
 */
import { expect } from 'vitest';
import { wsClient } from '../graphql/helpers.js';
import { openNdjsonWatch, openWatch, sleep } from '../watch/helpers.js';

export const PERSONS = '/apis/people.example.com/v1alpha1/persons';
const P = 'peopleExampleCom_v1alpha1';

export interface Streams {
  rest: ReturnType<typeof openWatch>;
  ndjson: { events: any[]; ended: boolean };
  gql: { results: any[]; ended: boolean };
  /** Resolves once every stream delivered its initial ADDED events (`initial` of them). */
  ready(initial: number): Promise<void>;
  /** Resolves once every stream ended; throws after `timeoutMs`. */
  ended(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export function openStreams(gw: { url: string }, authorization: string): Streams {
  const rest = openWatch(gw, '', { authorization });

  const ndjson = openNdjsonWatch(gw, authorization);

  const client = wsClient(gw, { authorization });
  const gql = { results: [] as any[], ended: false };
  const sub = client.iterate({ query: `subscription { ${P}_watchPersons { type object { metadata { name } } } }` });
  void (async () => {
    try {
      for await (const r of sub) gql.results.push(r);
    } catch (e) {
      gql.results.push({ thrown: String(e) });
    } finally {
      gql.ended = true;
    }
  })();

  const waitFor = async (pred: () => boolean, what: string, timeoutMs: number) => {
    const end = Date.now() + timeoutMs;
    while (!pred()) {
      if (Date.now() > end) {
        throw new Error(`timed out waiting for ${what}: rest ${JSON.stringify(rest.events.map((e) => e.type))}, ndjson ${JSON.stringify(ndjson.events.map((e) => e.type))}, gql ${JSON.stringify(gql.results)}`);
      }
      await sleep(20);
    }
  };
  const added = (events: any[]) => events.filter((e) => e.type === 'ADDED').length;

  return {
    rest,
    ndjson,
    gql,
    async ready(initial) {
      await rest.opened;
      await waitFor(
        () => added(rest.events) >= initial && added(ndjson.events) >= initial && gql.results.filter((r) => r.data?.[`${P}_watchPersons`]?.type === 'ADDED').length >= initial,
        'the initial events',
        15_000,
      );
      expect(ndjson.status).toBe(200);
    },
    async ended(timeoutMs = 15_000) {
      let restClosed = false;
      void rest.closed.then(() => (restClosed = true));
      await waitFor(() => restClosed && ndjson.ended && gql.ended, 'every stream to end', timeoutMs);
    },
    async close() {
      rest.close();
      ndjson.close();
      await client.dispose();
    },
  };
}

/** Each stream ended with a 403 ERROR (REST) or a FORBIDDEN error (GraphQL) as its last message. */
export async function expectForbiddenEnd(s: Streams): Promise<void> {
  expect(s.rest.events.at(-1)).toMatchObject({ type: 'ERROR', object: { code: 403 } });
  expect(await s.rest.closed).toBe(4403);
  expect(s.ndjson.events.at(-1)).toMatchObject({ type: 'ERROR', object: { code: 403 } });
  expect(s.gql.results.at(-1)?.errors?.map((e: any) => e.extensions?.code)).toEqual(['FORBIDDEN']);
}
