/**
 * Introspection follows the rule of discovery (docs/API.md §5, §8): `__schema` and `__type`
 * describe every model and field, as `/apis` and `/openapi.json` do, so an anonymous caller may
 * introspect only when a rule grants it `get` on the non-resource URL `/apis` (the `anonymous`
 * role does not by default); otherwise the operation is refused before it runs with
 * `UNAUTHENTICATED` (HTTP 401). Authenticated callers hold that right through the
 * `authenticated` role. `__typename` is not introspection and stays open to everyone.
 *
 * An envelop plugin, so HTTP (yoga and the POST door) and graphql-ws alike obey it; whether a
 * document introspects is computed once per parsed document.
 */
import { Kind, type DocumentNode, type SelectionSetNode } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { Unauthenticated } from '../errors/index.js';
import { attributesOf } from '../identity/authorizer.js';
import type { GraphQLContext } from './context.js';
import { toGraphQLError } from './errors.js';

/** The non-resource URL whose `get` grants introspection (the discovery root). */
export const INTROSPECTION_PATH = '/apis';

function selects(set: SelectionSetNode | undefined, fragments: Map<string, SelectionSetNode>, seen: Set<string>): boolean {
  for (const sel of set?.selections ?? []) {
    if (sel.kind === Kind.FIELD) {
      if (sel.name.value === '__schema' || sel.name.value === '__type') return true;
      if (selects(sel.selectionSet, fragments, seen)) return true;
    } else if (sel.kind === Kind.INLINE_FRAGMENT) {
      if (selects(sel.selectionSet, fragments, seen)) return true;
    } else if (!seen.has(sel.name.value)) {
      seen.add(sel.name.value);
      if (selects(fragments.get(sel.name.value), fragments, seen)) return true;
    }
  }
  return false;
}

/** Whether any operation of the document selects `__schema` or `__type`, at any depth. */
export function isIntrospection(document: DocumentNode): boolean {
  const fragments = new Map<string, SelectionSetNode>();
  for (const def of document.definitions) if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def.selectionSet);
  return document.definitions.some((def) => def.kind === Kind.OPERATION_DEFINITION && selects(def.selectionSet, fragments, new Set()));
}

export function useIntrospectionRule(): Plugin {
  /** Per parsed document (documents are cached, document-cache.ts). */
  const introspects = new WeakMap<DocumentNode, boolean>();
  const introspecting = (document: DocumentNode) => {
    let known = introspects.get(document);
    if (known === undefined) introspects.set(document, (known = isIntrospection(document)));
    return known;
  };
  return {
    // Synchronous unless the document introspects: most operations pay no promise here.
    onExecute({ args, setResultAndStopExecution }) {
      if (!introspecting(args.document)) return;
      const ctx = args.contextValue as unknown as GraphQLContext;
      if (ctx.caller.authenticated) return;
      const attrs = attributesOf(ctx.caller, { verb: 'get', isResourceRequest: false, apiGroup: '', apiVersion: '', resource: '', path: INTROSPECTION_PATH });
      return (async () => {
        if ((await ctx.authorizer.authorize(attrs)).allowed) return;
        const refusal = new Unauthenticated('authentication required: introspection follows the rule of discovery (get on /apis), which anonymous callers do not hold');
        setResultAndStopExecution({ errors: [toGraphQLError(refusal, { request: true }) as never] });
      })();
    },
  };
}
