/**
 * `@auth`: the RBAC check of a generated field, declared in SDL and placed on every model
 * field by build-schema.ts. `applyAuthDirective` wraps each such field's `resolve` (queries,
 * mutations) or `subscribe` (subscriptions: checked once, before the stream opens) with a call
 * to the request's Authorizer; a denial is an UNAUTHENTICATED (anonymous caller) or FORBIDDEN
 * error and the resolver never runs.
 * Being the outermost wrapper of every generated field, it also turns ApiErrors into GraphQL
 * errors (errors.ts).
 */
import { buildSchema, defaultFieldResolver, type GraphQLDirective, type GraphQLSchema } from 'graphql';
import { getDirective, MapperKind, mapSchema } from '@graphql-tools/utils';
import { toApiError } from '../errors/index.js';
import { attributesOf, denial, preauthorized, type Attributes } from '../identity/authorizer.js';
import { graphQLContext, type GraphQLContext } from './context.js';
import { toGraphQLError } from './errors.js';
import { admitsWatch } from '../watch/rules.js';

export const AUTH_DIRECTIVE_SDL = /* GraphQL */ `
"""
Access check: the caller must be allowed \`verb\` on \`resource\` (optionally \`resource/subresource\`)
in \`group\`/\`version\`; the object name, when the field has a \`name\` argument, is checked too.
"""
directive @auth(verb: String!, resource: String!, group: String!, version: String!, subresource: String) on FIELD_DEFINITION
`;

export const authDirective: GraphQLDirective = buildSchema(AUTH_DIRECTIVE_SDL).getDirective('auth')!;

export interface AuthSpec {
  verb: string;
  resource: string;
  group: string;
  version: string;
  subresource?: string;
}

/** Field `extensions` that attach `@auth(...)` to a programmatically built field. */
export const authExtensions = (spec: AuthSpec) => ({ directives: { auth: [spec] } });

/** The request path of a field's collection, e.g. `/apis/<group>/<version>/<resource>` (once per field). */
const collectionPath = (spec: AuthSpec) =>
  [spec.group ? `/apis/${spec.group}/${spec.version}` : `/api/${spec.version}`, spec.resource].filter(Boolean).join('/');

function attributesFor(spec: AuthSpec, collection: string, args: Record<string, unknown>, ctx: GraphQLContext): Attributes {
  const name = typeof args.name === 'string' ? args.name : '';
  const path = !name ? collection : spec.subresource ? `${collection}/${name}/${spec.subresource}` : `${collection}/${name}`;
  return attributesOf(ctx.caller, {
    verb: spec.verb,
    apiGroup: spec.group,
    apiVersion: spec.version,
    resource: spec.resource,
    subresource: spec.subresource,
    name,
    path,
  });
}

/**
 * The one authorization of a field. Returns the context the resolver runs with: the request's
 * GraphQLContext fields (not yoga's request fields), with an authorizer that answers this same
 * request from the decision just taken, so the operation does not ask again.
 * A watch may open restricted to the names a resourceNames grant lists (see Decision.names).
 */
async function check(spec: AuthSpec, collection: string, args: Record<string, unknown>, ctx: GraphQLContext): Promise<GraphQLContext> {
  const attrs = attributesFor(spec, collection, args, ctx);
  const decision = await ctx.authorizer.authorize(attrs);
  if (!admitsWatch(spec.verb, decision)) throw denial(attrs);
  return graphQLContext(ctx.caller, preauthorized(attrs, decision, ctx.authorizer), ctx.watches, ctx.fieldDone, ctx.budget);
}

/** Tells the context's observer how a checked field ended (`status`: 200, or the error's). */
function report(spec: AuthSpec, args: Record<string, unknown>, ctx: GraphQLContext, err?: unknown, result?: unknown): void {
  if (!ctx.fieldDone) return;
  // A create names its object in the body: the audit names the object created.
  const created = spec.verb === 'create' ? (result as { metadata?: { name?: unknown } } | undefined)?.metadata?.name : undefined;
  ctx.fieldDone({
    verb: spec.verb,
    group: spec.group,
    version: spec.version,
    resource: spec.resource,
    subresource: spec.subresource ?? '',
    name: typeof args.name === 'string' ? args.name : typeof created === 'string' ? created : '',
    status: err === undefined ? 200 : toApiError(err).status,
  });
}

/** Returns a copy of `schema` whose `@auth` fields check the authorizer first. */
export function applyAuthDirective(schema: GraphQLSchema): GraphQLSchema {
  return mapSchema(schema, {
    [MapperKind.OBJECT_FIELD]: (field) => {
      const spec = getDirective(schema, field, 'auth')?.[0] as AuthSpec | undefined;
      if (!spec) return field;
      const collection = collectionPath(spec);
      if (field.subscribe) {
        const subscribe = field.subscribe;
        return {
          ...field,
          subscribe: async (source, args, ctx: GraphQLContext, info) => {
            try {
              return await subscribe(source, args, await check(spec, collection, args, ctx), info);
            } catch (err) {
              report(spec, args, ctx, err);
              throw toGraphQLError(err);
            }
          },
        };
      }
      const resolve = field.resolve ?? defaultFieldResolver;
      return {
        ...field,
        resolve: async (source, args, ctx: GraphQLContext, info) => {
          try {
            const result = await resolve(source, args, await check(spec, collection, args, ctx), info);
            report(spec, args, ctx, undefined, result);
            return result;
          } catch (err) {
            report(spec, args, ctx, err);
            throw toGraphQLError(err);
          }
        },
      };
    },
  });
}
