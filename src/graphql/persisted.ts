/**
 * Persisted operations (docs/API.md §13), on every door (POST, GET, graphql-ws) alike:
 *
 *  - Automatic persisted queries (the Apollo protocol): a request may carry
 *    `extensions.persistedQuery: {version: 1, sha256Hash}`. With a hash alone, the document
 *    registered under it runs, or the answer is the error `PersistedQueryNotFound` (code
 *    PERSISTED_QUERY_NOT_FOUND, HTTP 404), and the client sends the text with its hash, which is
 *    checked (SHA-256 of the text, else BAD_REQUEST) and remembered. The memory is bounded: at
 *    most MAX_ENTRIES documents and MAX_BYTES of text, the least recently used going first.
 *  - An allow-list (`SVC_GRAPHQL_OPERATIONS=<file>`, a JSON object from hash to document): only
 *    those operations run, sent by hash or as their exact text; anything else is BAD_REQUEST
 *    (HTTP 400), and nothing is remembered.
 *
 * graphql-yoga's plugin-apq and plugin-persisted-operations (not dependencies) do the same on
 * yoga's own request path only (its `onParams` hook); the POST door (node-http.ts) and
 * graphql-ws do not pass there, so the rule is written once here and each door asks `resolve`.
 */
import { hash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { GraphQLError, parse } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { graphQLError } from './errors.js';

const MAX_ENTRIES = 1000;
const MAX_BYTES = 16 * 1024 * 1024;
const SHA256_HEX = /^[0-9a-f]{64}$/;

export const sha256Hex = (text: string): string => hash('sha256', text, 'hex');

/** The parameters a door has: a query text (may be absent or empty with a hash) and extensions. */
export interface PersistedParams {
  query?: string | null;
  extensions?: Record<string, unknown> | null;
}

const badRequest = (message: string) => graphQLError(message, 'BAD_REQUEST', { http: { status: 400 } });

export const notFound = (): GraphQLError =>
  new GraphQLError('PersistedQueryNotFound', { extensions: { code: 'PERSISTED_QUERY_NOT_FOUND', http: { status: 404 } } });

/** A least-recently-used map of documents bounded by count and by total characters. */
class DocumentMemory {
  private readonly docs = new Map<string, string>();
  private chars = 0;

  get(hash: string): string | undefined {
    const doc = this.docs.get(hash);
    if (doc !== undefined) {
      this.docs.delete(hash);
      this.docs.set(hash, doc);
    }
    return doc;
  }

  set(hash: string, doc: string): void {
    if (doc.length > MAX_BYTES) return;
    const old = this.docs.get(hash);
    if (old !== undefined) {
      this.docs.delete(hash);
      this.chars -= old.length;
    }
    this.docs.set(hash, doc);
    this.chars += doc.length;
    while (this.docs.size > MAX_ENTRIES || this.chars > MAX_BYTES) {
      const [oldest, text] = this.docs.entries().next().value!;
      this.docs.delete(oldest);
      this.chars -= text.length;
    }
  }
}

export class PersistedOperations {
  private readonly memory = new DocumentMemory();
  private readonly allowed: Map<string, string> | undefined;
  private readonly allowedTexts: Set<string> | undefined;

  /** `allowList`: hash → document; when given, only those operations run. */
  constructor(allowList?: Record<string, string>) {
    if (allowList) {
      this.allowed = new Map(Object.entries(allowList));
      this.allowedTexts = new Set(this.allowed.values());
    }
  }

  /**
   * The query text to run for these parameters (unchanged without a hash), or throws the
   * GraphQLError to answer with. Without a hash or a query, returns the query as it is (the
   * door then answers its usual "no query" error).
   */
  resolve(params: PersistedParams): string | null | undefined {
    const ext = params.extensions?.persistedQuery;
    const query = typeof params.query === 'string' && params.query !== '' ? params.query : undefined;
    let hash: string | undefined;
    if (ext !== undefined && ext !== null) {
      const e = ext as { version?: unknown; sha256Hash?: unknown };
      if (typeof ext !== 'object' || Array.isArray(ext) || e.version !== 1 || typeof e.sha256Hash !== 'string') {
        throw badRequest('extensions.persistedQuery must be {version: 1, sha256Hash: "<hex SHA-256 of the document>"}.');
      }
      hash = e.sha256Hash;
    }
    if (this.allowed) return this.fromAllowList(hash, query);
    if (hash === undefined) return params.query;
    const key = hash.toLowerCase();
    if (!SHA256_HEX.test(key)) throw badRequest('extensions.persistedQuery.sha256Hash must be 64 hexadecimal digits (the SHA-256 of the document).');
    if (query === undefined) {
      const known = this.memory.get(key);
      if (known === undefined) throw notFound();
      return known;
    }
    if (sha256Hex(query) !== key) throw badRequest('PersistedQueryMismatch: sha256Hash is not the SHA-256 of the query text.');
    this.memory.set(key, query);
    return query;
  }

  private fromAllowList(hash: string | undefined, query: string | undefined): string {
    if (hash !== undefined) {
      const doc = this.allowed!.get(hash);
      if (doc === undefined) throw badRequest('This operation is not in the allow-list of persisted operations (SVC_GRAPHQL_OPERATIONS).');
      if (query !== undefined && query !== doc) throw badRequest('PersistedQueryMismatch: the query text is not the document of this hash in the allow-list.');
      return doc;
    }
    if (query === undefined || !this.allowedTexts!.has(query)) {
      throw badRequest('Only the persisted operations of the allow-list run here (SVC_GRAPHQL_OPERATIONS): send one by its hash or as its exact text.');
    }
    return query;
  }
}

/** yoga's request path (GET, and whatever node-http.ts hands to yoga): the query text from `resolve`. */
export function usePersistedOperations(persisted: PersistedOperations): Plugin {
  return {
    onParams({ params, setParams }) {
      const query = persisted.resolve(params as PersistedParams);
      if (query !== params.query) setParams({ ...params, query: query ?? undefined });
    },
  };
}

/**
 * Reads an allow-list file: a JSON object from hash to document text, every document parsing.
 * Throws an Error whose message names the file and what is wrong.
 */
export async function loadAllowList(file: string): Promise<Record<string, string>> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(file, 'utf8'));
  } catch (e) {
    throw new Error(`SVC_GRAPHQL_OPERATIONS: cannot read ${file} as JSON: ${(e as Error).message.split('\n')[0]}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new Error(`SVC_GRAPHQL_OPERATIONS: ${file} must hold a JSON object from hash to document`);
  }
  for (const [hash, doc] of Object.entries(parsed)) {
    if (typeof doc !== 'string') throw new Error(`SVC_GRAPHQL_OPERATIONS: ${file}: the document of "${hash}" is not a string`);
    try {
      parse(doc);
    } catch (e) {
      throw new Error(`SVC_GRAPHQL_OPERATIONS: ${file}: the document of "${hash}" does not parse: ${(e as Error).message}`);
    }
  }
  return parsed as Record<string, string>;
}
