/**
 * Request-shape limits, checked before execution (HTTP and WebSocket alike, as an envelop
 * plugin): tokens while parsing, depth and aliases while validating, the nesting of variables
 * before execution. A violation is a GraphQL error with `extensions.code: BAD_REQUEST` (HTTP
 * 400). `bodyTooDeep` is the same nesting limit for a POST body before it is parsed as JSON.
 *
 * And the response limit (operations/budget.ts), spent by the fields as they read: an operation
 * that overspends it answers only that refusal (no partial data), HTTP 400.
 */
import {
  GraphQLError,
  Kind,
  type ASTVisitor,
  type FragmentDefinitionNode,
  type SelectionSetNode,
  type ValidationContext,
  type ValidationRule,
} from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { BadRequest } from '../errors/index.js';
import { textDepth, valueDepth } from '../json/depth.js';
import { graphQLError } from './errors.js';
import { LIMITS } from '../limits.js';
import type { ResponseBudget } from '../operations/budget.js';

export interface Limits {
  /** Deepest field nesting of an operation (fragments expanded); `{ a { b } }` is 2. */
  maxDepth: number;
  /** Lexical tokens of a document. */
  maxTokens: number;
  /** Aliased fields in a document. */
  maxAliases: number;
  /** Cost of an operation (cost.ts; SVC_GRAPHQL_MAX_COST). */
  maxCost: number;
  /** JSON nesting depth of the variables (and of a POST body): the gateway's jsonDepth. */
  jsonDepth: number;
}

export const DEFAULT_LIMITS: Limits = { maxDepth: 15, maxTokens: 2000, maxAliases: 30, maxCost: LIMITS.graphqlMaxCost, jsonDepth: LIMITS.jsonDepth };

/**
 * A refusal by a limit: `BAD_REQUEST`, HTTP 400 whatever the Accept header. yoga answers a
 * parse or validation error 200 to a client accepting only `application/json` when its
 * `http.spec` flag is set, and sets that flag on every parse error (`spec ||= true`): here the
 * flag reads false and ignores writes.
 */
function limitError(message: string, nodes?: GraphQLError['nodes']): GraphQLError {
  const http = { status: 400 };
  Object.defineProperty(http, 'spec', { get: () => false, set: () => undefined, enumerable: false });
  return graphQLError(message, 'BAD_REQUEST', { http }, nodes);
}

/** Depth of a selection set; fragment depths are memoised, spread cycles count as 0. */
function depthOf(
  set: SelectionSetNode,
  fragments: Map<string, FragmentDefinitionNode>,
  memo: Map<string, number>,
): number {
  let max = 0;
  for (const sel of set.selections) {
    let d = 0;
    if (sel.kind === Kind.FIELD) d = 1 + (sel.selectionSet ? depthOf(sel.selectionSet, fragments, memo) : 0);
    else if (sel.kind === Kind.INLINE_FRAGMENT) d = depthOf(sel.selectionSet, fragments, memo);
    else {
      const name = sel.name.value;
      const known = memo.get(name);
      if (known !== undefined) d = known;
      else {
        const fragment = fragments.get(name);
        memo.set(name, 0); // cycle guard; NoFragmentCyclesRule reports the cycle itself
        d = fragment ? depthOf(fragment.selectionSet, fragments, memo) : 0;
        memo.set(name, d);
      }
    }
    if (d > max) max = d;
  }
  return max;
}

export function maxDepthRule(maxDepth: number): ValidationRule {
  return function MaxDepthRule(context: ValidationContext): ASTVisitor {
    const fragments = new Map<string, FragmentDefinitionNode>();
    for (const def of context.getDocument().definitions) {
      if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def);
    }
    const memo = new Map<string, number>();
    return {
      OperationDefinition(node) {
        const depth = depthOf(node.selectionSet, fragments, memo);
        if (depth > maxDepth) {
          const op = node.name ? `Operation "${node.name.value}"` : 'The operation';
          context.reportError(limitError(`${op} is ${depth} levels deep; the maximum is ${maxDepth}.`, [node]));
        }
      },
    };
  };
}

export function maxAliasesRule(maxAliases: number): ValidationRule {
  return function MaxAliasesRule(context: ValidationContext): ASTVisitor {
    let count = 0;
    return {
      Field(node) {
        if (node.alias && ++count === maxAliases + 1) {
          context.reportError(limitError(`The document uses more than ${maxAliases} aliases.`, [node]));
        }
      },
    };
  };
}

const isObject = (v: unknown): v is object => typeof v === 'object' && v !== null;

/** The common case, checked without valueDepth's stack and set: scalars, or lists/objects of scalars. */
function atMostTwoDeep(variables: unknown): boolean {
  if (!isObject(variables)) return true;
  for (const v of Object.values(variables)) {
    if (isObject(v) && (Array.isArray(v) ? v.some(isObject) : Object.values(v).some(isObject))) return false;
  }
  return true;
}

/**
 * Variables nested deeper than the JSON depth limit (src/limits.ts) are refused before input
 * coercion, the merge patch or a store walks them recursively.
 */
function variablesTooDeep(variables: unknown, max: number): { errors: GraphQLError[] } | undefined {
  // The variables map itself is one level.
  if (atMostTwoDeep(variables) || valueDepth(variables, max + 1) <= max + 1) return undefined;
  return { errors: [limitError(`The variables are nested more than ${max} levels deep (limit: JSON nesting depth ${max}).`)] };
}

/**
 * `svcBodyDepthChecked: true` on the initial context of a request whose whole body text passed
 * `bodyTooDeep` (node-http.ts): its variables are shallower than that body, so `onExecute` does
 * not walk them again. A context property, not a set of checked objects: nothing outlives the
 * request.
 */
export interface BodyDepthChecked {
  svcBodyDepthChecked?: boolean;
}

/**
 * A POST body (JSON text) nested deeper than the JSON depth limit, refused before it is parsed:
 * variables that deep would exhaust the stack of input coercion and of the merge patch.
 */
export function bodyTooDeep(text: string, max: number): BadRequest | undefined {
  if (textDepth(text, max) <= max) return undefined;
  return new BadRequest(`The request body is nested more than ${max} levels deep (limit: JSON nesting depth ${max}).`);
}

/** The envelop/yoga plugin applying the limits. */
export function useLimits(limits: Limits = DEFAULT_LIMITS): Plugin {
  const rules = [maxDepthRule(limits.maxDepth), maxAliasesRule(limits.maxAliases)];
  type ParseFn = Parameters<NonNullable<Plugin['onParse']>>[0]['parseFn'];
  const tokenLimited =
    (parseFn: ParseFn): ParseFn =>
    (source, options) => {
      try {
        return parseFn(source, { ...options, maxTokens: limits.maxTokens });
      } catch (e) {
        if (e instanceof GraphQLError && /tokens/.test(e.message) && e.message.includes(String(limits.maxTokens))) {
          throw limitError(`The document has more than ${limits.maxTokens} tokens.`);
        }
        throw e;
      }
    };
  const wrapped = new WeakMap<ParseFn, ParseFn>();
  return {
    onExecute({ args, setResultAndStopExecution }) {
      const bounded = (args.contextValue as BodyDepthChecked | undefined)?.svcBodyDepthChecked === true;
      const refused = bounded ? undefined : variablesTooDeep(args.variableValues, limits.jsonDepth);
      if (refused) return setResultAndStopExecution(refused);
      const budget = (args.contextValue as { budget?: ResponseBudget }).budget;
      if (!budget) return;
      return {
        onExecuteDone({ setResult }) {
          const over = budget.exceeded;
          if (over) setResult({ errors: [limitError(over.message)] });
        },
      };
    },
    onSubscribe({ args, setResultAndStopExecution }) {
      const refused = variablesTooDeep(args.variableValues, limits.jsonDepth);
      if (refused) setResultAndStopExecution(refused);
    },
    onParse({ parseFn, setParseFn }) {
      // The engine's parse function never changes: wrapped once, not per request.
      let limited = wrapped.get(parseFn);
      if (!limited) wrapped.set(parseFn, (limited = tokenLimited(parseFn)));
      setParseFn(limited);
    },
    onValidate({ addValidationRule }) {
      for (const rule of rules) addValidationRule(rule);
    },
  };
}
