/** GraphQL test helpers: POST a query, open a graphql-ws client, a controllable authorizer. */
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import type { Attributes, Authorizer } from '../../src/identity/authorizer.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

export interface GqlResponse {
  status: number;
  headers: Headers;
  body: { data?: any; errors?: { message: string; path?: string[]; extensions?: Record<string, any> }[] };
}

export async function gql(
  gw: { url: string },
  query: string,
  variables?: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<GqlResponse> {
  const res = await fetch(`${gw.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json', ...headers },
    body: JSON.stringify({ query, variables }),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: JSON.parse(text) };
}

/** The `extensions.code` of each error, in order. */
export const codes = (r: GqlResponse) => (r.body.errors ?? []).map((e) => e.extensions?.code);

export function wsClient(gw: { url: string }, connectionParams?: Record<string, unknown>, headers?: Record<string, string>): Client {
  class HeaderWebSocket extends WebSocket {
    constructor(address: string, protocols?: string | string[]) {
      super(address, protocols, { headers });
    }
  }
  return createClient({
    url: `${gw.url.replace(/^http/, 'ws')}/graphql`,
    webSocketImpl: headers ? HeaderWebSocket : WebSocket,
    connectionParams,
    retryAttempts: 0,
    lazy: true,
  });
}

/** Collects the results of one subscription until `count` arrived (or the stream ends). */
export async function take(iterator: AsyncIterator<unknown>, count: number, timeoutMs = 5000): Promise<any[]> {
  const out: unknown[] = [];
  const deadline = Date.now() + timeoutMs;
  while (out.length < count) {
    const left = deadline - Date.now();
    if (left <= 0) throw new Error(`timed out after ${out.length} of ${count} results: ${JSON.stringify(out)}`);
    const next = await Promise.race([
      iterator.next(),
      new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), left)),
    ]);
    if (next === 'timeout') continue;
    if (next.done) break;
    out.push(next.value);
  }
  return out;
}

/**
 * An authorizer tests steer: it records every request and answers with `rule`
 * (allow when it returns true, deny when false, fail when it throws).
 */
export function testAuthorizer(): Authorizer & { calls: Attributes[]; rule: (a: Attributes) => boolean } {
  const self = {
    calls: [] as Attributes[],
    rule: (_a: Attributes) => true,
    async authorize(attrs: Attributes) {
      self.calls.push(attrs);
      const allowed = self.rule(attrs);
      return { allowed, reason: allowed ? 'test: allowed' : 'test: denied' };
    },
  };
  return self;
}

/**
 * Starts an embedded-store gateway with a controllable authorizer for the enclosing describe:
 * the authorizer allows everything and forgets its calls before each test.
 */
export function useAuthorizedGateway(): { readonly gw: TestGateway; authz: ReturnType<typeof testAuthorizer> } {
  const authz = testAuthorizer();
  let gw: TestGateway | undefined;
  beforeAll(async () => {
    gw = await startTestGateway('embedded', { authorizer: authz });
  });
  afterAll(async () => {
    await gw?.dispose();
  });
  beforeEach(() => {
    authz.rule = () => true;
    authz.calls.length = 0;
  });
  return {
    authz,
    get gw() {
      if (!gw) throw new Error('the gateway is not started yet');
      return gw;
    },
  };
}
