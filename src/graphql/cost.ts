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
 * place every door (POST, GET, graphql-ws) passes after validation and before execution; a
 * document without variables is costed once per (schema, document, operation name).
 */
import { GraphQLError, isListType, isNonNullType, type DocumentNode, type GraphQLSchema, type GraphQLOutputType } from 'graphql';
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

const hasVariables = (document: DocumentNode) =>
  document.definitions.some((d) => d.kind === 'OperationDefinition' && (d.variableDefinitions?.length ?? 0) > 0);

export const costError = (cost: number, max: number): GraphQLError =>
  graphQLError(
    `The operation costs ${cost}, more than the limit of ${max} (SVC_GRAPHQL_MAX_COST; docs/API.md §13): ask for smaller pages (first, last, size) or fewer fields.`,
    'BAD_REQUEST',
    { http: { status: 400 }, cost, maxCost: max },
  );

/** The envelop plugin enforcing `maxCost` (see the header). */
export function useCostLimit(maxCost: number): Plugin {
  const known = new WeakMap<GraphQLSchema, WeakMap<DocumentNode, Map<string | undefined, number | undefined>>>();
  const costOf = (schema: GraphQLSchema, document: DocumentNode, name: string | undefined, variables: Record<string, unknown> | undefined) => {
    if (hasVariables(document)) return operationCost(schema, document, name, variables);
    let byDocument = known.get(schema);
    if (!byDocument) known.set(schema, (byDocument = new WeakMap()));
    let byName = byDocument.get(document);
    if (!byName) byDocument.set(document, (byName = new Map()));
    if (!byName.has(name)) byName.set(name, operationCost(schema, document, name, undefined));
    return byName.get(name);
  };
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
