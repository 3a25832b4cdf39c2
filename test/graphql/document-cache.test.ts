/**
 * The envelop chain's parse and validation cache (src/graphql/document-cache.ts): a document
 * text is parsed once, a parse error is thrown again without parsing, a document is validated
 * once per schema, the oldest text goes first when the cache is full, and a new schema is
 * validated afresh.
 */
import { buildSchema, type DocumentNode } from 'graphql';
import { createYoga, type Plugin } from 'graphql-yoga';
import { describe, expect, it } from 'vitest';
import { useDocumentCache } from '../../src/graphql/document-cache.js';

function counted(max?: number) {
  const calls = { parse: 0, validate: 0 };
  const counter: Plugin = {
    onParse({ parseFn, setParseFn }) {
      setParseFn((...a) => (calls.parse++, parseFn(...a)));
    },
    onValidate({ validateFn, setValidationFn }) {
      setValidationFn((...a) => (calls.validate++, validateFn(...a)));
    },
  };
  const schema = buildSchema('type Query { a: Int b: String }');
  const yoga = createYoga({ schema, parserAndValidationCache: false, logging: false, plugins: [counter, useDocumentCache(max)] });
  const enveloped = () => yoga.getEnveloped({});
  return { calls, enveloped, schema };
}

describe('document cache', () => {
  it('parses and validates a text once, and gives the same document object', () => {
    const { calls, enveloped } = counted();
    const docs: DocumentNode[] = [];
    for (let i = 0; i < 3; i++) {
      const e = enveloped();
      const doc = e.parse('{ a }');
      expect(e.validate(e.schema, doc)).toEqual([]);
      docs.push(doc);
    }
    expect(calls).toEqual({ parse: 1, validate: 1 });
    expect(docs[1]).toBe(docs[0]);
    expect(docs[2]).toBe(docs[0]);
  });

  it('throws a cached parse error again without parsing', () => {
    const { calls, enveloped } = counted();
    expect(() => enveloped().parse('{ a ')).toThrow(/Syntax Error/);
    expect(() => enveloped().parse('{ a ')).toThrow(/Syntax Error/);
    expect(calls.parse).toBe(1);
  });

  it('keeps validation errors per document', () => {
    const { calls, enveloped } = counted();
    for (let i = 0; i < 2; i++) {
      const e = enveloped();
      const errors = e.validate(e.schema, e.parse('{ nope }'));
      expect(errors.map((x: Error) => x.message)).toEqual(['Cannot query field "nope" on type "Query".']);
    }
    expect(calls.validate).toBe(1);
  });

  it('drops the oldest text when full', () => {
    const { calls, enveloped } = counted(2);
    for (const q of ['{ a }', '{ b }', '{ a b }', '{ b }', '{ a }']) enveloped().parse(q);
    // '{ a }' was dropped by '{ a b }'; '{ b }' was still there.
    expect(calls.parse).toBe(4);
  });

  it('validates again for another schema', () => {
    const { calls, enveloped } = counted();
    const e = enveloped();
    const doc = e.parse('{ a }');
    e.validate(e.schema, doc);
    e.validate(buildSchema('type Query { a: Int }'), doc);
    e.validate(e.schema, doc);
    expect(calls.validate).toBe(2);
  });
});
