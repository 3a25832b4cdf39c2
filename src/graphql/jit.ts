/**
 * A yoga (envelop) plugin that executes queries and mutations with graphql-jit: each operation
 * is compiled once per (schema, document, operation name) and its compiled function runs
 * instead of graphql-js. Documents come from the parse cache (document-cache.ts), so the same
 * query text gives the same DocumentNode and hits the compiled entry; a swapped schema starts a
 * new cache and the old one goes with it (WeakMaps keyed by the schema and the document objects).
 *
 * Left to graphql-js (`executeFn`):
 *  - operations graphql-jit cannot handle (`jitSafe`);
 *  - a request whose variables fail coercion, so its errors are worded by graphql-js exactly as
 *    before (graphql-jit coerces variables itself; nothing has executed when it refuses them).
 * Subscriptions are not touched (graphql-ws and yoga subscribe with graphql-js).
 */
import { getNamedType, isInputObjectType, isLeafType, Kind, type DocumentNode, type GraphQLSchema, type OperationDefinitionNode, type TypeNode } from 'graphql';
import { getOperationAST, type ExecutionResult } from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import type { Plugin } from 'graphql-yoga';

/** Whether an input type can hold itself (a Person input holding a Person), at any depth. */
function recursiveInput(schema: GraphQLSchema, name: string, open = new Set<string>()): boolean {
  const type = schema.getType(name);
  if (!type) return true;
  if (isLeafType(type)) return false;
  if (!isInputObjectType(type) || open.has(name)) return true;
  open.add(name);
  for (const field of Object.values(type.getFields())) {
    const inner = getNamedType(field.type);
    if (!isLeafType(inner) && recursiveInput(schema, inner.name, open)) return true;
  }
  open.delete(name);
  return false;
}

/**
 * graphql-jit expands recursive types eagerly and exhausts memory on recursive input types
 * (a Person input holding a Person) and on introspection; those stay on graphql-js. Variables of
 * input types that cannot hold themselves (a connection's `where`) compile.
 */
function jitSafe(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode): boolean {
  const text = document.loc?.source.body;
  if (text === undefined || /__schema|__type\b/.test(text)) return false;
  for (const v of operation.variableDefinitions ?? []) {
    let t: TypeNode = v.type;
    while (t.kind !== Kind.NAMED_TYPE) t = t.type;
    if (recursiveInput(schema, t.name.value)) return false;
  }
  return true;
}

type ByName = Map<string | undefined, CompiledQuery | null>;

export function useJit(): Plugin {
  const compiled = new WeakMap<GraphQLSchema, WeakMap<DocumentNode, ByName>>();

  /** The compiled operation, or null when it runs on graphql-js. */
  function compiledFor(schema: GraphQLSchema, document: DocumentNode, operationName: string | undefined): CompiledQuery | null {
    let byDocument = compiled.get(schema);
    if (!byDocument) compiled.set(schema, (byDocument = new WeakMap()));
    let byName = byDocument.get(document);
    if (!byName) byDocument.set(document, (byName = new Map()));
    let entry = byName.get(operationName);
    if (entry === undefined) {
      const operation = getOperationAST(document, operationName);
      const safe = operation != null && operation.operation !== 'subscription' && jitSafe(schema, document, operation);
      let c: CompiledQuery | ExecutionResult | null = null;
      try {
        if (safe) c = compileQuery(schema, document, operationName);
      } catch {
        c = null; // graphql-js runs it (and reports whatever is wrong with it)
      }
      entry = c && isCompiledQuery(c) ? c : null;
      byName.set(operationName, entry);
    }
    return entry;
  }

  type ExecuteFn = Parameters<NonNullable<Plugin['onExecute']>>[0]['executeFn'];
  /** graphql-jit in front of `executeFn`; built once per `executeFn` (the same one every request). */
  const jitted = new WeakMap<ExecuteFn, ExecuteFn>();
  const jitFor = (executeFn: ExecuteFn): ExecuteFn => async (args) => {
    const query = compiledFor(args.schema, args.document, args.operationName ?? undefined);
    if (!query) return executeFn(args);
    const result = await query.query(args.rootValue, args.contextValue, (args.variableValues ?? {}) as Record<string, unknown>);
    return 'data' in result ? result : executeFn(args);
  };

  return {
    onExecute({ executeFn, setExecuteFn }) {
      let fn = jitted.get(executeFn);
      if (!fn) jitted.set(executeFn, (fn = jitFor(executeFn)));
      setExecuteFn(fn);
    },
  };
}
