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

export type Contact = ContactsByTagQuery['crmExampleNet_v1_people']['items'][number];
export type ContactEvent = ContactChangesSubscription['crmExampleNet_v1_watchPeople'];

/** Every contact with `tag`, page after page, and the position to watch from. */
export async function contactsByTag(apollo: ApolloClient, tag: string, size = 20): Promise<{ contacts: Contact[]; resourceVersion: string }> {
  const contacts: Contact[] = [];
  let resourceVersion = '';
  for (let page = 1; ; page++) {
    const { data } = await apollo.query({
      query: ContactsByTagDocument,
      variables: { selector: [`spec.tags=${tag}`], page, size },
      fetchPolicy: 'network-only',
    });
    const list = data!.crmExampleNet_v1_people;
    contacts.push(...list.items);
    if (page === 1) resourceVersion = list.resourceVersion;
    if (!list.hasNext) return { contacts, resourceVersion };
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
