/**
 * What the example front-end asks of the gateway, typed by the documents next to this file
 * (`*.graphql`, compiled into gql/ by `npm run codegen`): a change of a field name or argument
 * in a document, or in the schema, fails `tsc` here, not at run time.
 */
import type { ApolloClient } from '@apollo/client';
import {
  ContactChangesDocument,
  ContactsByTagDocument,
  type ContactChangesSubscription,
  type ContactsByTagQuery,
} from './gql/graphql.js';

export type Contact = ContactsByTagQuery['crmExampleNet_v1_peopleConnection']['edges'][number]['node'];
export type ContactEvent = ContactChangesSubscription['crmExampleNet_v1_watchPeople'];

/** Every contact with `tag`, page after page (`size` a page), the total, and the position to watch from. */
export async function contactsByTag(
  apollo: ApolloClient,
  tag: string,
  size = 20,
): Promise<{ contacts: Contact[]; totalCount: number; resourceVersion: string }> {
  const contacts: Contact[] = [];
  let after: string | null | undefined;
  let resourceVersion = '';
  for (;;) {
    const { data } = await apollo.query({ query: ContactsByTagDocument, variables: { tag, first: size, after }, fetchPolicy: 'network-only' });
    const page = data!.crmExampleNet_v1_peopleConnection;
    contacts.push(...page.edges.map((e) => e.node));
    // Watching from the first page's position misses nothing that changed during the walk.
    resourceVersion ||= page.resourceVersion;
    after = page.pageInfo.endCursor;
    if (!page.pageInfo.hasNextPage) return { contacts, totalCount: page.totalCount, resourceVersion };
  }
}

/** Calls `onEvent` for every change to a contact with `tag` after `resourceVersion`; returns the unsubscribe. */
export function watchContacts(
  apollo: ApolloClient,
  tag: string,
  resourceVersion: string | undefined,
  onEvent: (event: ContactEvent) => void,
  onError: (error: Error) => void = () => {},
): () => void {
  const subscription = apollo
    .subscribe({ query: ContactChangesDocument, variables: { selector: [`spec.tags=${tag}`], resourceVersion } })
    .subscribe({
      next: ({ data, error }) => (error ? onError(error) : data && onEvent(data.crmExampleNet_v1_watchPeople)),
      error: onError,
    });
  return () => subscription.unsubscribe();
}
