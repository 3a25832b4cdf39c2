/**
 * The example front-end's GraphQL client: Apollo Client over the gateway's /graphql, queries and
 * mutations over HTTP, subscriptions over graphql-ws on the same path.
 *
 * It signs in the way a browser can: a personal access token, sent as `Authorization: Bearer`
 * over HTTP and as the token sub-protocol on the WebSocket, where a browser cannot set headers
 * (docs/GUIDE.md "Browsers as API clients").
 *
 * `persisted: true` sends every operation by the hash the code generator gave it (the
 * `__meta__.hash` of the documents in gql/), never its text: the production set-up, where the
 * gateway runs only the operations of gql/persisted-documents.json (SVC_GRAPHQL_OPERATIONS).
 */
import { ApolloClient, ApolloLink, HttpLink, InMemoryCache } from '@apollo/client';
import { PersistedQueryLink } from '@apollo/client/link/persisted-queries';
import { isSubscriptionOperation } from '@apollo/client/utilities';
import { print, type DocumentNode } from 'graphql';
import { createClient, type Client } from 'graphql-ws';
import { Observable } from 'rxjs';

/** What graphql-ws needs of a WebSocket class (the browser's, or `ws` under Node). */
export type WebSocketClass = new (url: string, protocols?: string | string[]) => unknown;

export interface ClientOptions {
  /** The gateway's origin, e.g. `http://127.0.0.1:8090`. */
  url: string;
  /** A personal access token (POST /apis/uc.api.security.svc.run/v1alpha1/personalaccesstokens). */
  token: string;
  /** Send operations by hash only (the gateway runs with SVC_GRAPHQL_OPERATIONS). */
  persisted?: boolean;
  /** Default: the global WebSocket (browsers). */
  webSocketImpl?: WebSocketClass;
}

/** The hash the code generator put on a document of gql/graphql.ts. */
export function documentHash(document: DocumentNode): string {
  const hash = (document as { __meta__?: { hash?: string } }).__meta__?.hash;
  if (!hash) throw new Error('not a generated document (run npm run codegen)');
  return hash;
}

/** The sub-protocol that carries the token: base64url of it, without padding. */
export const tokenProtocol = (token: string): string =>
  `base64url.bearer.authorization.svc.run.${btoa(token).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')}`;

/** Subscriptions over graphql-ws; by hash, with an empty text, when persisted. */
class WsLink extends ApolloLink {
  constructor(
    private readonly ws: Client,
    private readonly persisted: boolean,
  ) {
    super();
  }

  override request(operation: ApolloLink.Operation): Observable<ApolloLink.Result> {
    const { query, variables, operationName } = operation;
    const payload = this.persisted
      ? { query: '', variables, operationName, extensions: { persistedQuery: { version: 1, sha256Hash: documentHash(query) } } }
      : { query: print(query), variables, operationName };
    return new Observable((observer) =>
      this.ws.subscribe(payload, {
        next: (result) => observer.next(result as ApolloLink.Result),
        complete: () => observer.complete(),
        error: (e) => observer.error(e instanceof Error ? e : new Error(Array.isArray(e) ? e.map((x) => x.message).join('; ') : `connection closed (${(e as { code?: number }).code})`)),
      }),
    );
  }
}

export interface CrmClient {
  apollo: ApolloClient;
  /** Closes the WebSocket and stops the client. */
  close(): Promise<void>;
}

export function createCrmClient(opts: ClientOptions): CrmClient {
  const Base = opts.webSocketImpl ?? (globalThis as { WebSocket?: WebSocketClass }).WebSocket;
  if (!Base) throw new Error('no WebSocket class: pass webSocketImpl');
  const protocol = tokenProtocol(opts.token);
  // graphql-ws offers graphql-transport-ws; the token rides along as a second protocol.
  const WithToken = class extends (Base as new (url: string, protocols: string[]) => object) {
    constructor(url: string, protocols?: string | string[]) {
      super(url, [...[protocols ?? []].flat(), protocol]);
    }
  };
  const ws = createClient({ url: `${opts.url.replace(/^http/, 'ws')}/graphql`, webSocketImpl: WithToken, lazy: true, retryAttempts: 0 });
  const http = new HttpLink({ uri: `${opts.url}/graphql`, headers: { authorization: `Bearer ${opts.token}` } });
  const persisted = opts.persisted ?? false;
  const httpChain = persisted ? new PersistedQueryLink({ generateHash: documentHash }).concat(http) : http;
  const apollo = new ApolloClient({
    link: ApolloLink.split((op) => isSubscriptionOperation(op.query), new WsLink(ws, persisted), httpChain),
    cache: new InMemoryCache(),
  });
  return {
    apollo,
    async close() {
      apollo.stop();
      await ws.dispose();
    },
  };
}
