/**
 * Thin resolvers: each turns GraphQL arguments into one call of the operations layer (the same
 * functions REST uses) and returns its result. No rules live here; errors propagate and are
 * shaped by errors.ts (a watch's ERROR event too: `watchEventError`).
 */
import type { GraphQLFieldResolver, GraphQLInputType } from 'graphql';
import { NotFound, toApiError } from '../errors/index.js';
import {
  createObject,
  deleteObject,
  getObject,
  listObjects,
  patchObject,
  updateObject,
  updateStatus,
  errorEvent,
  prepareWatch,
  type ModelEntry,
  type OperationContext,
  type WatchEvent,
} from '../operations/index.js';
import { attributesOf } from '../identity/authorizer.js';
import type { ApiObject } from '../store/object.js';
import type { GraphQLContext } from './context.js';
import { isInitialEventsEnd } from '../watch/encode.js';
import { createEventStream } from './event-stream.js';
import { inputToJson } from './json-schema-types.js';
import { watchEventError } from './errors.js';
import type { Me, WatchEventType } from './generated/types.js';
import type { WhereTypes } from './where.js';

type Args = Record<string, unknown>;
type Resolver = GraphQLFieldResolver<unknown, GraphQLContext, Args>;

/**
 * The per-model payload of a subscription: the WatchEvent, with BOOKMARK objects dropped and the
 * end of the initial events as a flag (REST carries it as the BOOKMARK object's annotation).
 */
export interface WatchPayload {
  type: WatchEventType;
  object: ApiObject | null;
  resourceVersion: string;
  initialEventsEnd: boolean;
}

const opContext = (ctx: GraphQLContext): OperationContext => ({
  caller: ctx.caller,
  authorizer: ctx.authorizer,
  watches: ctx.watches,
  budget: ctx.budget,
});

/** `null`/absent list arguments → undefined, a single string → a list of one. */
const strings = (v: unknown): string[] | undefined =>
  v === null || v === undefined ? undefined : Array.isArray(v) ? (v as string[]) : [String(v)];
const optional = <T>(v: T | null | undefined): T | undefined => (v === null ? undefined : v);

export interface ModelResolvers {
  get: Resolver;
  list: Resolver;
  create: Resolver;
  update: Resolver;
  patch: Resolver;
  delete: Resolver;
  updateStatus: Resolver;
  watch: { subscribe: Resolver; resolve: GraphQLFieldResolver<WatchEvent, GraphQLContext, Args> };
}

export function modelResolvers(
  entry: ModelEntry,
  inputs: { object: GraphQLInputType; status: GraphQLInputType },
  whereRequirements: WhereTypes['requirements'],
): ModelResolvers {
  const body = (v: unknown) => inputToJson(inputs.object, v);
  return {
    async get(_src, args, ctx) {
      try {
        return await getObject(opContext(ctx), entry, String(args.name));
      } catch (e) {
        if (e instanceof NotFound) return null;
        throw e;
      }
    },
    list: (_src, args, ctx) =>
      listObjects(opContext(ctx), entry, {
        page: optional(args.page as number | null),
        size: optional(args.size as number | null),
        sort: strings(args.sort),
        labelSelector: strings(args.labelSelector),
        fieldSelector: strings(args.fieldSelector),
      }),
    create: (_src, args, ctx) => createObject(opContext(ctx), entry, body(args.object)),
    update: (_src, args, ctx) => updateObject(opContext(ctx), entry, String(args.name), body(args.object)),
    patch: (_src, args, ctx) => patchObject(opContext(ctx), entry, String(args.name), args.patch, 'merge'),
    delete: (_src, args, ctx) => deleteObject(opContext(ctx), entry, String(args.name)),
    updateStatus: (_src, args, ctx) =>
      updateStatus(
        opContext(ctx),
        entry,
        String(args.name),
        inputToJson(inputs.status, args.status),
        optional(args.version as number | null),
      ),
    watch: {
      async subscribe(_src, args, ctx) {
        // Same operation and feed as REST watch. The queue is bounded: a subscriber that falls
        // that far behind gets an ERROR (503) and its subscription ends, releasing its memory.
        // Bad `where` values are refused here, before the subscription opens (BAD_REQUEST).
        const where = args.where === null || args.where === undefined ? undefined : whereRequirements(args.where);
        const stream = createEventStream<WatchEvent>({
          maxQueued: 1000,
          onOverflow: () => ({
            type: 'ERROR',
            object: { code: 503, message: 'The subscriber fell too far behind; subscribe again.' },
            resourceVersion: '',
          }),
        });
        const prepared = await prepareWatch(opContext(ctx), entry, {
          labelSelector: strings(args.labelSelector),
          fieldSelector: strings(args.fieldSelector),
          where,
          resourceVersion: optional(args.resourceVersion as string | null),
          // Periodic BOOKMARKs as always on subscriptions (REST asks with allowWatchBookmarks).
          bookmarks: true,
        });
        try {
          const stop = await prepared.start({ send: (event) => stream.push(event), end: () => stream.end() });
          stream.onClose(stop);
        } catch (e) {
          const err = toApiError(e);
          stream.push(errorEvent(err));
          stream.end();
        }
        return stream;
      },
      resolve(event): WatchPayload {
        if (event.type === 'ERROR') throw watchEventError(event.object);
        const object = event.type === 'BOOKMARK' ? null : (event.object as ApiObject);
        return { type: event.type, object, resourceVersion: event.resourceVersion, initialEventsEnd: isInitialEventsEnd(event) };
      },
    },
  };
}

export interface CallerDescription {
  roles: string[];
  uiPermissions: string[];
}

/** `canI(verb, group, resource, name)`: asks the caller's authorizer, as a front-end would before showing a button. */
export function canIResolver(): Resolver {
  return async (_src, args, ctx): Promise<boolean> => {
    const [resource = '', subresource = ''] = String(args.resource).split('/', 2);
    const group = String(args.group ?? '');
    const version = typeof args.version === 'string' ? args.version : '';
    const name = typeof args.name === 'string' ? args.name : '';
    const decision = await ctx.authorizer.authorize(
      attributesOf(ctx.caller, { verb: String(args.verb), apiGroup: group, apiVersion: version, resource, subresource, name }),
    );
    return decision.allowed;
  };
}

/** `me`: the caller, with roles resolved by `describe` when given. */
export function meResolver(describe?: (caller: GraphQLContext['caller']) => Promise<CallerDescription>): Resolver {
  return async (_src, _args, ctx): Promise<Me> => {
    const { roles, uiPermissions } = describe
      ? await describe(ctx.caller)
      : { roles: ctx.caller.authenticated ? ['anonymous', 'authenticated'] : ['anonymous'], uiPermissions: [] as string[] };
    return { username: ctx.caller.username, roles, uiPermissions };
  };
}
