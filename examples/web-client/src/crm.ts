/**
 * What the example front-end asks of the gateway, typed by the documents next to this file
 * (`*.graphql`, compiled into gql/ by `npm run codegen`): a change of a field name or argument
 * in a document, or in the schema, fails `tsc` here, not at run time.
 */
import type { ApolloClient } from '@apollo/client';
import { BigDealsDocument, DealChangesDocument, type BigDealsQuery, type DealChangesSubscription } from './gql/graphql.js';

export type Deal = BigDealsQuery['crmExampleNet_v1_dealsConnection']['edges'][number]['node'];
export type DealEvent = DealChangesSubscription['crmExampleNet_v1_watchDeals'];

/**
 * Every deal of at least `minAmount`, largest first, page after page (`size` a page), with its
 * contact; the total, and the position to watch from.
 */
export async function bigDeals(
  apollo: ApolloClient,
  minAmount: number,
  size = 20,
): Promise<{ deals: Deal[]; totalCount: number; resourceVersion: string }> {
  const deals: Deal[] = [];
  let after: string | null | undefined;
  let resourceVersion = '';
  for (;;) {
    const { data } = await apollo.query({ query: BigDealsDocument, variables: { minAmount, first: size, after }, fetchPolicy: 'network-only' });
    const page = data!.crmExampleNet_v1_dealsConnection;
    deals.push(...page.edges.map((e) => e.node));
    // Watching from the first page's position misses nothing that changed during the walk.
    resourceVersion ||= page.resourceVersion;
    after = page.pageInfo.endCursor;
    if (!page.pageInfo.hasNextPage) return { deals, totalCount: page.totalCount, resourceVersion };
  }
}

/**
 * Calls `onEvent` for every change to a deal of at least `minAmount` after `resourceVersion`,
 * with the same `where` as `bigDeals` (a deal whose amount rises past it arrives as ADDED, one
 * that falls below as DELETED), each with its contact; returns the unsubscribe.
 */
export function watchBigDeals(
  apollo: ApolloClient,
  minAmount: number,
  resourceVersion: string | undefined,
  onEvent: (event: DealEvent) => void,
  onError: (error: Error) => void = () => {},
): () => void {
  const subscription = apollo
    .subscribe({ query: DealChangesDocument, variables: { minAmount, resourceVersion } })
    .subscribe({
      next: ({ data, error }) => (error ? onError(error) : data && onEvent(data.crmExampleNet_v1_watchDeals)),
      error: onError,
    });
  return () => subscription.unsubscribe();
}
