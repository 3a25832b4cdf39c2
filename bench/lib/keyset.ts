/**
 * Keyset page scenarios (docs/API.md §12, §13): a page of 20 with a label selector
 * (`tier=tier-0`, a third of the objects) and an indexed sort (spec.name), read first and at a
 * depth of 12,500 (or a quarter of the objects when fewer), over REST `limit`/`continue` and a
 * GraphQL connection, beside the numbered page at the same depth. The deep tokens are found once
 * before timing, by walking the list in pages of 1,000.
 */
import { COLLECTION_PATH, GROUP } from './dataset.js';
import type { HttpClient, RequestSpec } from './load.js';

const TIER = `${GROUP}/tier`;
const PAGE = 20;
const QUERY = `labelSelector=${encodeURIComponent(`${TIER}=tier-0`)}&sort=spec.name,asc`;
const FIELD = 'peopleExampleCom_v1alpha1_personsConnection';
const CONNECTION =
  `query C($first: Int!, $after: String, $where: PeopleExampleComV1alpha1PersonWhere) { ${FIELD}(first: $first, after: $after, orderBy: [SPEC_NAME_ASC], where: $where) { ` +
  'edges { cursor node { apiVersion kind metadata { name labels version creationTimestamp } spec { name age gender } } } ' +
  'pageInfo { hasNextPage endCursor } resourceVersion } }';

export const restPath = (limit: number, token: string) => `${COLLECTION_PATH}?${QUERY}&limit=${limit}${token ? `&continue=${token}` : ''}`;
const WHERE = { metadata: { labels: { matchLabels: { [TIER]: 'tier-0' } } } };
export const gqlBody = (first: number, after: string | null) => JSON.stringify({ query: CONNECTION, variables: { first, after, where: WHERE } });

export interface KeysetSetup {
  depth: number;
  restToken: string;
  gqlCursor: string | null;
}

/** Walks to `depth` over REST and GraphQL; checks both land on the numbered page there. */
export async function keysetSetup(gw: HttpClient, size: number, headers: Record<string, string>): Promise<KeysetSetup> {
  const depth = Math.min(12_500, Math.floor(size / 4 / PAGE) * PAGE);
  const get = async (spec: RequestSpec) => {
    const r = await gw.request(spec, headers);
    if (r.status !== 200) throw new Error(`keyset setup: ${spec.method} ${spec.path}: ${r.status} ${r.body.toString().slice(0, 200)}`);
    return JSON.parse(r.body.toString());
  };
  let restToken = '';
  let gqlCursor: string | null = null;
  for (let read = 0; read < depth; ) {
    const n = Math.min(1000, depth - read);
    restToken = (await get({ method: 'GET', path: restPath(n, restToken) })).continue;
    const c: { pageInfo: { endCursor: string | null } } = (await get({ method: "POST", path: "/graphql", body: gqlBody(n, gqlCursor) })).data[FIELD];
    gqlCursor = c.pageInfo.endCursor;
    read += n;
  }
  const names = (items: { metadata: { name: string } }[]) => items.map((o) => o.metadata.name).join(',');
  const numbered = await get({ method: 'GET', path: `${COLLECTION_PATH}?${QUERY}&page=${depth / PAGE + 1}&size=${PAGE}` });
  const keyset = await get({ method: 'GET', path: restPath(PAGE, restToken) });
  const connection = (await get({ method: 'POST', path: '/graphql', body: gqlBody(PAGE, gqlCursor) })).data[FIELD];
  if (names(keyset.items) !== names(numbered.items) || names(connection.edges.map((e: { node: { metadata: { name: string } } }) => e.node)) !== names(numbered.items)) {
    throw new Error('keyset setup: the keyset page, the connection page and the numbered page at the same depth differ');
  }
  return { depth, restToken, gqlCursor };
}

/** The requests of the keyset scenarios. */
export const keysetRequests = (k: KeysetSetup) => ({
  restFirst: (): RequestSpec => ({ method: 'GET', path: restPath(PAGE, '') }),
  restDeep: (): RequestSpec => ({ method: 'GET', path: restPath(PAGE, k.restToken) }),
  pageDeep: (): RequestSpec => ({ method: 'GET', path: `${COLLECTION_PATH}?${QUERY}&page=${k.depth / PAGE + 1}&size=${PAGE}` }),
  gqlFirst: (): RequestSpec => ({ method: 'POST', path: '/graphql', body: gqlBody(PAGE, null) }),
  gqlDeep: (): RequestSpec => ({ method: 'POST', path: '/graphql', body: gqlBody(PAGE, k.gqlCursor) }),
});
