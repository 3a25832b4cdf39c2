/**
 * The parse and validation cache of the envelop chain (in place of yoga's built-in one, which
 * per request joins the names of every validation rule into a cache key and reads a TTL clock).
 * Documents are cached by their text, parse errors too (thrown again, as yoga does); validation
 * results by (schema, document). The validation rules of one yoga instance never change (the
 * specified rules and `limits.ts`), so they need no place in the key. A swapped schema starts a
 * new validation cache and the old one goes with it (WeakMaps).
 */
import type { DocumentNode, GraphQLSchema } from 'graphql';
import type { Plugin } from 'graphql-yoga';

/** Distinct document texts kept; the oldest is dropped first (as many as yoga's default). */
const MAX_DOCUMENTS = 1024;

export function useDocumentCache(max = MAX_DOCUMENTS): Plugin {
  const documents = new Map<string, DocumentNode | Error>();
  const validations = new WeakMap<GraphQLSchema, WeakMap<DocumentNode, readonly Error[]>>();
  const remember = (text: string, result: DocumentNode | Error) => {
    if (documents.size >= max) documents.delete(documents.keys().next().value!);
    documents.set(text, result);
  };
  return {
    onParse({ params, setParsedDocument }) {
      const text = typeof params.source === 'string' ? params.source : params.source.body;
      const known = documents.get(text);
      if (known instanceof Error) throw known;
      if (known) return setParsedDocument(known);
      return ({ result }) => {
        if (result != null) remember(text, result as DocumentNode | Error);
      };
    },
    onValidate({ params: { schema, documentAST }, setResult }) {
      if (schema == null) return;
      let bySchema = validations.get(schema);
      if (!bySchema) validations.set(schema, (bySchema = new WeakMap()));
      const known = bySchema.get(documentAST);
      if (known) return setResult(known);
      return ({ result }) => {
        if (result != null) bySchema.set(documentAST, result);
      };
    },
  };
}
