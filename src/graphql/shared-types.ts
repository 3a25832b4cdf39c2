/**
 * Types shared by every model: the `JSON` scalar, `ObjectMeta`/`ObjectMetaInput`, the watch
 * event type enum and `Me`. One instance each, so every generated schema reuses them. They are
 * constants: their fields depend on nothing per gateway, so gateways in one process share them.
 */
import {
  GraphQLEnumType,
  GraphQLError,
  GraphQLInputObjectType,
  GraphQLInt,
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLScalarType,
  GraphQLString,
  Kind,
  type ValueNode,
} from 'graphql';

type Variables = { [name: string]: unknown } | null | undefined;

function literalToJson(node: ValueNode, variables: Variables): unknown {
  switch (node.kind) {
    case Kind.NULL:
      return null;
    case Kind.STRING:
    case Kind.ENUM:
      return node.value;
    case Kind.BOOLEAN:
      return node.value;
    case Kind.INT:
    case Kind.FLOAT:
      return Number(node.value);
    case Kind.LIST:
      return node.values.map((v) => literalToJson(v, variables));
    case Kind.OBJECT: {
      const out: Record<string, unknown> = {};
      for (const f of node.fields) out[f.name.value] = literalToJson(f.value, variables);
      return out;
    }
    case Kind.VARIABLE:
      return variables?.[node.name.value] ?? null;
  }
}

export const JSONScalar = new GraphQLScalarType({
  name: 'JSON',
  description: 'Any JSON value: object, array, string, number, boolean or null.',
  specifiedByURL: 'https://www.rfc-editor.org/rfc/rfc8259',
  serialize: (value) => value,
  parseValue: (value) => value,
  parseLiteral: (node, variables) => {
    if (node.kind === Kind.ENUM) {
      throw new GraphQLError(`JSON cannot represent the bare word ${node.value}; quote strings.`, { nodes: node });
    }
    return literalToJson(node, variables);
  },
});

const stringList = new GraphQLList(new GraphQLNonNull(GraphQLString));

export const ObjectMetaType = new GraphQLObjectType({
  name: 'ObjectMeta',
  description: 'Metadata every object carries (docs/API.md §3).',
  fields: {
    name: { type: new GraphQLNonNull(GraphQLString), description: 'Unique name of the object within its model.' },
    generateName: { type: GraphQLString, description: 'Prefix the name was generated from, if any.' },
    labels: { type: JSONScalar, description: 'Map of label key to value.' },
    annotations: { type: JSONScalar, description: 'Map of annotation key to value.' },
    finalizers: { type: stringList, description: 'While non-empty, a deleted object is kept.' },
    version: { type: GraphQLInt, description: 'Optimistic-lock version, incremented on every write.' },
    creationTimestamp: { type: GraphQLString, description: 'RFC 3339 UTC, set on create.' },
    deletionTimestamp: { type: GraphQLString, description: 'RFC 3339 UTC, set by delete.' },
  },
});

export const ObjectMetaInputType = new GraphQLInputObjectType({
  name: 'ObjectMetaInput',
  description: 'Client-settable metadata. Server-owned fields are not accepted (version only on update).',
  fields: {
    name: { type: GraphQLString },
    generateName: { type: GraphQLString, description: 'Used on create when name is omitted.' },
    labels: { type: JSONScalar, description: 'Map of label key to value.' },
    annotations: { type: JSONScalar, description: 'Map of annotation key to value.' },
    finalizers: { type: stringList },
    version: { type: GraphQLInt, description: 'On update: the stored version (optimistic lock).' },
  },
});

export const WatchEventTypeEnum = new GraphQLEnumType({
  name: 'WatchEventType',
  description: 'Kind of change a watch event reports.',
  values: {
    ADDED: { description: 'The object was created, or started matching the selectors.' },
    MODIFIED: { description: 'The object changed and still matches.' },
    DELETED: { description: 'The object was removed, or stopped matching the selectors.' },
    BOOKMARK: { description: 'A progress marker; `object` is null. `initialEventsEnd` marks the one ending the initial events.' },
  },
});

export const MeType = new GraphQLObjectType({
  name: 'Me',
  description: 'The caller of the request.',
  fields: {
    username: { type: new GraphQLNonNull(GraphQLString), description: '`anonymous` without credentials.' },
    roles: { type: new GraphQLNonNull(stringList), description: 'Every role held after resolution.' },
    uiPermissions: { type: new GraphQLNonNull(stringList), description: 'UI permissions granted by those roles.' },
  },
});

/** Names the shared types occupy; a model may not generate any of them. */
export const SHARED_TYPE_NAMES: ReadonlySet<string> = new Set([
  'Query',
  'Mutation',
  'Subscription',
  'JSON',
  'Node',
  'ObjectMeta',
  'ObjectMetaInput',
  'WatchEventType',
  'Me',
  // built-in scalars
  'String',
  'Int',
  'Float',
  'Boolean',
  'ID',
]);
