/**
 * The cost limit of docs/API.md §13 (SVC_GRAPHQL_MAX_COST): an operation's cost is computed from
 * its document and variables before any resolver runs, and an operation over the limit is
 * refused with BAD_REQUEST (HTTP 400) naming its cost and the limit.
 *
 * The rule, per field: 1, plus the cost of its selection multiplied by
 *  - a connection's `first` or `last` (20 when neither is given);
 *  - a §5 list's `size` (20 without `size`, as for a connection without `first`);
 *  - `nodes(ids)`: the number of ids;
 *  - a list relation (`x-svc-ref` on an array): 20.
 * graphql-query-complexity walks the document (fragments, @skip/@include, variables); the
 * estimator below is the rule. It runs as an envelop plugin in onExecute/onSubscribe, the one
 * place every door (POST, GET, graphql-ws) passes after validation and before execution. A cost
 * is kept per (schema, document, operation name, values of the variables the cost reads: those
 * in a multiplier argument or in @skip/@include), so a get by `$name` or a page of `$size` is
 * costed once, not on every request.
 */
import { GraphQLError, isListType, isNonNullType, Kind, visit, type DocumentNode, type GraphQLSchema, type GraphQLOutputType, type ValueNode } from 'graphql';
import { createRequire } from 'node:module';
import type { ComplexityEstimator, getComplexity as GetComplexity } from 'graphql-query-complexity';
import type { Plugin } from 'graphql-yoga';
import { graphQLError } from './errors.js';
import { RELATION_EXTENSION } from './relations.js';

/**
 * The CommonJS build: its ES module build imports `graphql/index.mjs`, another instance of
 * graphql than the one the schema is built with (which graphql-js refuses).
 */
const { getComplexity } = createRequire(import.meta.url)('graphql-query-complexity') as { getComplexity: typeof GetComplexity };

/** The multiplier of a connection without first/last, of a §5 list without size, and of a list relation. */
export const DEFAULT_MULTIPLIER = 20;

const isList = (t: GraphQLOutputType): boolean => isListType(isNonNullType(t) ? t.ofType : t);
const positive = (v: unknown): number | undefined => (typeof v === 'number' && v > 0 ? v : undefined);

/** The estimator of the rule in the header. */
export const costEstimator: ComplexityEstimator = ({ field, args, childComplexity }) => {
  const names = new Set(field.args.map((a) => a.name));
  let times = 1;
  if (names.has('first') || names.has('last')) times = positive(args.first) ?? positive(args.last) ?? DEFAULT_MULTIPLIER;
  else if (names.has('size') && names.has('page')) times = positive(args.size) ?? DEFAULT_MULTIPLIER;
  else if (names.has('ids') && Array.isArray(args.ids)) times = args.ids.length;
  else if (field.extensions?.[RELATION_EXTENSION] && isList(field.type)) times = DEFAULT_MULTIPLIER;
  return 1 + childComplexity * times;
};

/** The cost of one operation of a valid document; undefined when its variables do not coerce (execution refuses them). */
export function operationCost(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName: string | undefined,
  variables: Record<string, unknown> | undefined,
): number | undefined {
  try {
    return getComplexity({ estimators: [costEstimator], schema, query: document, operationName, variables });
  } catch {
    return undefined;
  }
}

/** The arguments the estimator multiplies by. */
const MULTIPLIER_ARGS = new Set(['first', 'last', 'size', 'ids']);

/** The names of the variables a value reads. */
function variablesIn(value: ValueNode, into: Set<string>): void {
  if (value.kind === Kind.VARIABLE) into.add(value.name.value);
  else if (value.kind === Kind.LIST) for (const v of value.values) variablesIn(v, into);
  else if (value.kind === Kind.OBJECT) for (const f of value.fields) variablesIn(f.value, into);
}

/** The variables a document's cost can depend on: those in a multiplier argument or in @skip/@include. */
function costVariables(document: DocumentNode): string[] {
  const names = new Set<string>();
  visit(document, {
    Argument(node) {
      if (MULTIPLIER_ARGS.has(node.name.value)) variablesIn(node.value, names);
    },
    Directive(node) {
      if (node.name.value === 'skip' || node.name.value === 'include') for (const a of node.arguments ?? []) variablesIn(a.value, names);
    },
  });
  return [...names];
}

/** Costs kept per document and operation: one per set of values of the variables it reads. */
const KEPT_PER_OPERATION = 64;

export const costError = (cost: number, max: number): GraphQLError =>
  graphQLError(
    `The operation costs ${cost}, more than the limit of ${max} (SVC_GRAPHQL_MAX_COST; docs/API.md §13): ask for smaller pages (first, last, size) or fewer fields.`,
    'BAD_REQUEST',
    { http: { status: 400 }, cost, maxCost: max },
  );

/**
 * The cost of an operation as the plugin computes it per request: kept per (schema, document,
 * operation name, values of the variables the cost reads), computed on a miss.
 */
export function costCalculator(): (
  schema: GraphQLSchema,
  document: DocumentNode,
  name: string | undefined,
  variables: Record<string, unknown> | undefined,
) => number | undefined {
  const known = new WeakMap<GraphQLSchema, WeakMap<DocumentNode, Map<string, number>>>();
  const readVariables = new WeakMap<DocumentNode, string[]>();
  return (schema, document, name, variables) => {
    let reads = readVariables.get(document);
    if (reads === undefined) readVariables.set(document, (reads = costVariables(document)));
    let byDocument = known.get(schema);
    if (!byDocument) known.set(schema, (byDocument = new WeakMap()));
    let kept = byDocument.get(document);
    if (!kept) byDocument.set(document, (kept = new Map()));
    const key = JSON.stringify([name ?? null, ...reads.map((v) => variables?.[v] ?? null)]);
    const cached = kept.get(key);
    if (cached !== undefined) return cached;
    // An undefined cost (variables that do not coerce: execution refuses them) is not kept.
    const cost = operationCost(schema, document, name, variables);
    if (cost !== undefined) {
      if (kept.size >= KEPT_PER_OPERATION) kept.clear();
      kept.set(key, cost);
    }
    return cost;
  };
}

/** The envelop plugin enforcing `maxCost` (see the header). */
export function useCostLimit(maxCost: number): Plugin {
  const costOf = costCalculator();
  type Stop = (result: { errors: GraphQLError[] }) => void;
  const check = ({ args, setResultAndStopExecution }: { args: Parameters<NonNullable<Plugin['onExecute']>>[0]['args']; setResultAndStopExecution: Stop }) => {
    const cost = costOf(args.schema, args.document, args.operationName ?? undefined, (args.variableValues ?? undefined) as Record<string, unknown> | undefined);
    if (cost !== undefined && cost > maxCost) setResultAndStopExecution({ errors: [costError(cost, maxCost)] });
  };
  return {
    onExecute: check,
    onSubscribe: check,
  };
}
