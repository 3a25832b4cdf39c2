/**
 * Object identity (docs/API.md §13): every model type implements `interface Node { id: ID! }`,
 * and `node(id)` / `nodes(ids)` fetch objects of any model by id, under that model's `get` rule
 * (resource names honoured), the way Relay and Apollo Client's normalised caches expect.
 *
 * An id is the base64url text of `group/version/kind/name` (no part holds a `/`): opaque to
 * clients, unique across models, and stable (it derives from the object's identity alone).
 * A malformed id is BAD_REQUEST before anything is read; a well-formed id of a model that is
 * not served, or of an object that does not exist, is null; a denied one is null with the
 * denial at its path (as `p_{singular}` would answer). `nodes` reads each model's objects with
 * one store query (loader.ts).
 */
import { createHash } from 'node:crypto';
import {
  GraphQLID,
  GraphQLInterfaceType,
  GraphQLList,
  GraphQLNonNull,
  type GraphQLFieldConfig,
  type GraphQLFieldConfigMap,
  type GraphQLResolveInfo,
} from 'graphql';
import { BadRequest } from '../errors/index.js';
import type { ModelEntry } from '../operations/index.js';
import type { Model } from '../registry/model.js';
import type { GraphQLContext } from './context.js';
import { loadObject } from './loader.js';
import { typeName } from './naming.js';

/** Most ids one `nodes` call takes (as a connection's `first`). */
export const MAX_NODE_IDS = 1000;
const MAX_ID_CHARS = 1024;

type Identity = Pick<Model, 'group' | 'version' | 'kind'>;

export const encodeId = (m: Identity, name: string): string =>
  Buffer.from(`${m.group}/${m.version}/${m.kind}/${name}`, 'utf8').toString('base64url');

/** The identity an id names; BadRequest when it is not an id this gateway issues. */
export function decodeId(id: string): Identity & { name: string } {
  const bad = () => new BadRequest(`"${id.length > 80 ? `${id.slice(0, 80)}…` : id}" is not a node id (ids come from the id field of an object).`);
  if (id.length === 0 || id.length > MAX_ID_CHARS || !/^[A-Za-z0-9_-]+$/.test(id)) throw bad();
  const text = Buffer.from(id, 'base64url').toString('utf8');
  if (Buffer.from(text, 'utf8').toString('base64url') !== id) throw bad();
  const parts = text.split('/');
  if (parts.length !== 4 || parts.slice(1).some((p) => p === '')) throw bad();
  const [group, version, kind, name] = parts as [string, string, string, string];
  return { group, version, kind, name };
}

/** `group/version` or `version` → the group and version of an apiVersion. */
function splitApiVersion(apiVersion: string): { group: string; version: string } {
  const at = apiVersion.lastIndexOf('/');
  return at < 0 ? { group: '', version: apiVersion } : { group: apiVersion.slice(0, at), version: apiVersion.slice(at + 1) };
}

export const NodeInterface = new GraphQLInterfaceType({
  name: 'Node',
  description: 'An object with an id unique across every model (Relay Global Object Identification); fetch it again with `node(id)`.',
  fields: { id: { type: new GraphQLNonNull(GraphQLID), description: 'Opaque, unique across models.' } },
  resolveType: (value: { apiVersion?: unknown; kind?: unknown }) =>
    typeof value.apiVersion === 'string' && typeof value.kind === 'string'
      ? typeName({ ...splitApiVersion(value.apiVersion), kind: value.kind })
      : undefined,
});

/**
 * The `id` field of a model's type. A nested self-reference (a schema `$ref: '#'`) without
 * `metadata.name` is no stored object: its id derives from its content instead.
 */
export function idField(model: Model): GraphQLFieldConfig<Record<string, unknown>, unknown> {
  return {
    type: new GraphQLNonNull(GraphQLID),
    description: 'Opaque id, unique across models: use it with `node(id)` and as a client cache key.',
    resolve: (src) => {
      const name = (src.metadata as { name?: unknown } | undefined)?.name;
      if (typeof name === 'string') return encodeId(model, name);
      return encodeId(model, `~${createHash('sha256').update(JSON.stringify(src)).digest('base64url')}`);
    },
  };
}

/** `node` and `nodes`, resolving ids of the models in `entries`. */
export function nodeFields(entries: readonly ModelEntry[]): GraphQLFieldConfigMap<unknown, GraphQLContext> {
  const byIdentity = new Map(entries.map((e) => [`${e.model.group}/${e.model.version}/${e.model.kind}`, e]));
  const fetch = (ctx: GraphQLContext, id: ReturnType<typeof decodeId>, info: GraphQLResolveInfo) => {
    const entry = byIdentity.get(`${id.group}/${id.version}/${id.kind}`);
    return entry ? loadObject(ctx, entry, id.name, info) : null;
  };
  return {
    node: {
      type: NodeInterface,
      description: 'The object with this id, under its model\'s `get` rule; null when there is none.',
      args: { id: { type: new GraphQLNonNull(GraphQLID) } },
      resolve: (_src, args: { id: string }, ctx, info) => fetch(ctx, decodeId(args.id), info),
    },
    nodes: {
      type: new GraphQLNonNull(new GraphQLList(NodeInterface)),
      description: `The objects with these ids (at most ${MAX_NODE_IDS}), in order; each as \`node\` answers it.`,
      args: { ids: { type: new GraphQLNonNull(new GraphQLList(new GraphQLNonNull(GraphQLID))) } },
      resolve: (_src, args: { ids: string[] }, ctx, info) => {
        if (args.ids.length > MAX_NODE_IDS) throw new BadRequest(`nodes takes at most ${MAX_NODE_IDS} ids, got ${args.ids.length}.`);
        const ids = args.ids.map(decodeId);
        return ids.map((id) => fetch(ctx, id, info));
      },
    },
  };
}
