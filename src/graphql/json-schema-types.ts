/**
 * JSON Schema → GraphQL types for one model (docs/API.md §5).
 *
 *  - objects with declared `properties` → object types (output) and `…Input` types (input);
 *    an object that also allows extra keys (`additionalProperties: true|{…}`,
 *    `patternProperties`) or declares no properties is a free-form map → `JSON`
 *  - string enums → GraphQL enums (shared by input and output) when every value is a valid
 *    GraphQL enum value, otherwise `String`
 *  - integer → Int (Float when its declared range or `format: int64` exceeds 32 bits),
 *    number → Float, boolean → Boolean, arrays → lists, anything else (oneOf, tuples…) → JSON
 *  - `$ref` to `#` (the model itself) or to any `#/…` pointer (`#/$defs/X`) → the named type of
 *    that pointer, so recursion becomes self-reference
 *  - `writeOnly` properties are left out of output types, `readOnly` ones out of input types
 *
 * Type names are the model's type name followed by the path of the schema inside the model
 * (`…PersonSpec`, `…PersonSpecAddress`, `…PersonAddress` for `$defs/Address`, `…TagsItem` for
 * array items). JSON property names that are not valid GraphQL names are sanitised; the
 * original name is kept in the field's `extensions.jsonName` and used in both directions.
 * Every field is nullable (objects are validated by the operations layer, which answers
 * INVALID with every failing field, exactly as REST does), except list items and the root's
 * apiVersion/kind.
 */
import {
  GraphQLBoolean,
  GraphQLEnumType,
  GraphQLFloat,
  GraphQLInputObjectType,
  GraphQLInt,
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLString,
  isInputObjectType,
  isListType,
  isNonNullType,
  type GraphQLEnumValueConfigMap,
  type GraphQLFieldConfigMap,
  type GraphQLInputFieldConfigMap,
  type GraphQLInputType,
  type GraphQLNamedType,
  type GraphQLOutputType,
  type GraphQLScalarType,
} from 'graphql';
import type { JSONSchema, Model } from '../registry/model.js';
import { GRAPHQL_NAME, modelNames, upperFirst } from './naming.js';
import { JSONScalar, ObjectMetaInputType, ObjectMetaType } from './shared-types.js';
import { idField, NodeInterface } from './node.js';

type Schema = JSONSchema | boolean;

export interface ModelTypes {
  /** The object type, e.g. `PeopleExampleComV1alpha1Person`. */
  output: GraphQLObjectType;
  /** Its input, e.g. `PeopleExampleComV1alpha1PersonInput`. */
  input: GraphQLInputObjectType;
  /** Input of the status mutation: the typed status input, or JSON when status is free-form. */
  statusInput: GraphQLInputType;
  /** Every named type generated for this model (shared ones excluded), in creation order. */
  namedTypes(): readonly GraphQLNamedType[];
}

/** Field extensions the builder sets. */
interface FieldExtensions {
  /** The JSON property name when the GraphQL field name differs. */
  jsonName?: string;
  /** The JSON Schema allows null here, so an explicit null is passed through. */
  jsonNullable?: boolean;
  /** The property's `x-svc-ref` (relations.ts adds the reference field beside it). */
  [REF_EXTENSION]?: unknown;
}

/** Field extension holding a property's `x-svc-ref` (docs/API.md §13). */
export const REF_EXTENSION = 'svcRef';

const ROOT_FIXED = new Set(['apiVersion', 'kind', 'metadata']);
const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;
const RESERVED_ENUM_VALUES = new Set(['true', 'false', 'null']);

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

type Shape =
  | { kind: 'scalar'; type: GraphQLScalarType }
  | { kind: 'json' }
  | { kind: 'enum'; values: string[] }
  | { kind: 'object'; properties: Record<string, Schema> }
  | { kind: 'array'; items: Schema | undefined };

function typesOf(s: JSONSchema): string[] | undefined {
  if (typeof s.type === 'string') return [s.type];
  if (Array.isArray(s.type)) return s.type.filter((t): t is string => typeof t === 'string');
  return undefined;
}

/** Whether a JSON value of this schema may be null. */
function allowsNull(s: Schema): boolean {
  if (typeof s === 'boolean') return s;
  return s.nullable === true || (typesOf(s)?.includes('null') ?? false);
}

function classify(s: Schema): Shape {
  if (typeof s === 'boolean') return { kind: 'json' };
  const declared = typesOf(s)?.filter((t) => t !== 'null');
  let t: string | undefined;
  if (declared) {
    if (declared.length === 1) t = declared[0];
    else if (declared.length === 2 && declared.includes('integer') && declared.includes('number')) t = 'number';
    else return { kind: 'json' };
  } else if (isObject(s.properties)) t = 'object';
  else if (s.items !== undefined) t = 'array';
  else if (Array.isArray(s.enum) && s.enum.every((v) => typeof v === 'string' || v === null)) t = 'string';
  else if (typeof s.const === 'string') t = 'string';
  switch (t) {
    case 'string': {
      if (!Array.isArray(s.enum)) return { kind: 'scalar', type: GraphQLString };
      const values = [...new Set(s.enum.filter((v) => v !== null))];
      const valid =
        values.length > 0 &&
        values.every((v) => typeof v === 'string' && GRAPHQL_NAME.test(v) && !RESERVED_ENUM_VALUES.has(v));
      return valid ? { kind: 'enum', values: values as string[] } : { kind: 'scalar', type: GraphQLString };
    }
    case 'integer': {
      const wide =
        s.format === 'int64' ||
        (typeof s.minimum === 'number' && s.minimum < INT32_MIN) ||
        (typeof s.maximum === 'number' && s.maximum > INT32_MAX);
      return { kind: 'scalar', type: wide ? GraphQLFloat : GraphQLInt };
    }
    case 'number':
      return { kind: 'scalar', type: GraphQLFloat };
    case 'boolean':
      return { kind: 'scalar', type: GraphQLBoolean };
    case 'array':
      if (s.prefixItems !== undefined || Array.isArray(s.items)) return { kind: 'json' };
      return { kind: 'array', items: s.items as Schema | undefined };
    case 'object': {
      const open = s.additionalProperties === true || isObject(s.additionalProperties) || s.patternProperties !== undefined;
      if (!open && isObject(s.properties) && Object.keys(s.properties).length > 0) {
        return { kind: 'object', properties: s.properties as Record<string, Schema> };
      }
      return { kind: 'json' };
    }
    default:
      return { kind: 'json' };
  }
}

/** `foo-bar_baz` → `FooBarBaz`; used for type-name segments. */
function pascal(segment: string): string {
  const parts = segment.split(/[^A-Za-z0-9]+/).filter(Boolean);
  return parts.map(upperFirst).join('') || 'Field';
}

/** A valid GraphQL field name for a JSON property (`x-y` → `x_y`, `1a` → `_1a`, `__x` → `f__x`). */
function fieldNameFor(prop: string): string {
  if (GRAPHQL_NAME.test(prop) && !prop.startsWith('__')) return prop;
  let name = prop.replace(/[^_0-9A-Za-z]/g, '_') || '_';
  if (/^[0-9]/.test(name)) name = `_${name}`;
  if (name.startsWith('__')) name = `f${name}`;
  return name;
}

/** JSON Pointer (without `#`) → segments. */
function pointerSegments(pointer: string): string[] {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

const escapeSegment = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

/** Name suffix for a schema location: `/properties/spec/properties/address` → `SpecAddress`. */
function pointerName(pointer: string): string {
  const segs = pointerSegments(pointer);
  let out = '';
  for (let i = 0; i < segs.length; i++) {
    const seg = segs[i]!;
    if ((seg === 'properties' || seg === '$defs' || seg === 'definitions') && i + 1 < segs.length) {
      out += pascal(segs[++i]!);
    } else if (seg === 'items') out += 'Item';
    else if (seg === 'additionalProperties') out += 'Value';
    else out += pascal(seg);
  }
  return out;
}

class ModelTypeBuilder {
  private readonly outputs = new Map<string, GraphQLObjectType>();
  private readonly inputs = new Map<string, GraphQLInputObjectType>();
  private readonly enums = new Map<string, GraphQLEnumType>();
  private readonly taken = new Set<string>();
  private readonly created: GraphQLNamedType[] = [];
  private readonly base: string;
  private readonly inputName: string;

  constructor(private readonly model: Model) {
    const names = modelNames(model);
    this.base = names.type;
    this.inputName = names.input;
    // Reserved for build-schema.ts's envelope types; a `$defs/List` becomes `…List2`.
    this.taken.add(names.list).add(names.watchEvent);
  }

  build(): ModelTypes {
    const output = this.objectOutput(this.model.schema, '');
    const input = this.objectInput(this.model.schema, '');
    const statusSchema = isObject(this.model.schema.properties) ? this.model.schema.properties.status : undefined;
    const statusInput = statusSchema === undefined ? JSONScalar : this.inputType(statusSchema as Schema, '/properties/status');
    // Create every reachable type now, in a fixed order, so generated names never depend on
    // which code path first asks for a type.
    forceFields(this.created);
    const created = [...this.created];
    return { output, input, statusInput, namedTypes: () => created };
  }

  /** A unique name for a generated type; a later claimant of a taken name gets a number. */
  private claim(name: string): string {
    let candidate = name;
    for (let n = 2; this.taken.has(candidate); n++) candidate = `${name}${n}`;
    this.taken.add(candidate);
    return candidate;
  }

  /** Follows `$ref` (and single-entry `allOf`) to the schema and pointer it designates. */
  private deref(schema: Schema, pointer: string): { schema: Schema; pointer: string } {
    let s = schema;
    let p = pointer;
    for (let hops = 0; hops < 32 && typeof s === 'object'; hops++) {
      if (typeof s.$ref === 'string') {
        const target = this.resolveRef(s.$ref);
        if (!target) return { schema: true, pointer: p };
        ({ schema: s, pointer: p } = target);
      } else if (Array.isArray(s.allOf) && s.allOf.length === 1 && Object.keys(s).every((k) => k === 'allOf' || k === 'description')) {
        s = s.allOf[0] as Schema;
        p = `${p}/allOf/0`;
      } else break;
    }
    return { schema: s, pointer: p };
  }

  private resolveRef(ref: string): { schema: Schema; pointer: string } | undefined {
    if (ref !== '#' && !ref.startsWith('#/')) return undefined;
    let decoded: string;
    try {
      decoded = decodeURIComponent(ref.slice(1));
    } catch {
      return undefined;
    }
    let cur: unknown = this.model.schema;
    for (const seg of pointerSegments(decoded)) {
      if (Array.isArray(cur)) cur = cur[Number(seg)];
      else if (isObject(cur)) cur = cur[seg];
      else return undefined;
    }
    if (typeof cur !== 'boolean' && !isObject(cur)) return undefined;
    return { schema: cur, pointer: decoded };
  }

  outputType(raw: Schema, at: string): GraphQLOutputType {
    const { schema, pointer } = this.deref(raw, at);
    if (pointer === '') return this.objectOutput(this.model.schema, '');
    const shape = classify(schema);
    switch (shape.kind) {
      case 'scalar':
        return shape.type;
      case 'json':
        return JSONScalar;
      case 'enum':
        return this.enumType(shape.values, schema, pointer);
      case 'object':
        return this.objectOutput(schema as JSONSchema, pointer);
      case 'array': {
        if (shape.items === undefined) return new GraphQLList(JSONScalar);
        const item = this.outputType(shape.items, `${pointer}/items`);
        return new GraphQLList(allowsNull(shape.items) || item === JSONScalar ? item : new GraphQLNonNull(item));
      }
    }
  }

  inputType(raw: Schema, at: string): GraphQLInputType {
    const { schema, pointer } = this.deref(raw, at);
    if (pointer === '') return this.objectInput(this.model.schema, '');
    const shape = classify(schema);
    switch (shape.kind) {
      case 'scalar':
        return shape.type;
      case 'json':
        return JSONScalar;
      case 'enum':
        return this.enumType(shape.values, schema, pointer);
      case 'object':
        return this.objectInput(schema as JSONSchema, pointer);
      case 'array': {
        if (shape.items === undefined) return new GraphQLList(JSONScalar);
        const item = this.inputType(shape.items, `${pointer}/items`);
        return new GraphQLList(allowsNull(shape.items) || item === JSONScalar ? item : new GraphQLNonNull(item));
      }
    }
  }

  private enumType(values: string[], schema: Schema, pointer: string): GraphQLEnumType {
    const existing = this.enums.get(pointer);
    if (existing) return existing;
    const config: GraphQLEnumValueConfigMap = {};
    for (const v of values) config[v] = { value: v };
    const type = new GraphQLEnumType({
      name: this.claim(this.base + pointerName(pointer)),
      description: descriptionOf(schema),
      values: config,
    });
    this.enums.set(pointer, type);
    this.created.push(type);
    return type;
  }

  private properties(schema: JSONSchema, pointer: string): [string, Schema, string][] {
    const props = isObject(schema.properties) ? (schema.properties as Record<string, Schema>) : {};
    return Object.entries(props)
      .filter(([key]) => pointer !== '' || !ROOT_FIXED.has(key))
      .map(([key, s]) => [key, s, `${pointer}/properties/${escapeSegment(key)}`]);
  }

  private objectOutput(schema: JSONSchema, pointer: string): GraphQLObjectType {
    const existing = this.outputs.get(pointer);
    if (existing) return existing;
    const root = pointer === '';
    const model = this.model;
    const type: GraphQLObjectType = new GraphQLObjectType({
      name: root ? this.claim(this.base) : this.claim(this.base + pointerName(pointer)),
      description: descriptionOf(schema) ?? (root ? `${model.kind} (${model.apiVersion}).` : undefined),
      interfaces: root ? [NodeInterface] : undefined,
      fields: () => {
        const fields: GraphQLFieldConfigMap<Record<string, unknown>, unknown> = {};
        if (root) {
          fields.id = idField(model);
          fields.apiVersion = {
            type: new GraphQLNonNull(GraphQLString),
            resolve: (src) => src.apiVersion ?? model.apiVersion,
          };
          fields.kind = { type: new GraphQLNonNull(GraphQLString), resolve: (src) => src.kind ?? model.kind };
          fields.metadata = {
            type: ObjectMetaType,
            description: 'Always set on stored objects; may be absent on nested self-references.',
          };
        }
        for (const [key, propSchema, at] of this.properties(schema, pointer)) {
          if (isObject(propSchema) && propSchema.writeOnly === true) continue;
          const name = uniqueField(fields, fieldNameFor(key));
          const extensions: FieldExtensions = name === key ? {} : { jsonName: key };
          if (isObject(propSchema) && propSchema['x-svc-ref'] !== undefined) extensions[REF_EXTENSION] = propSchema['x-svc-ref'];
          fields[name] = {
            type: this.outputType(propSchema, at),
            description: descriptionOf(propSchema) ?? descriptionOf(this.deref(propSchema, at).schema),
            extensions: { ...extensions },
            ...(name === key ? {} : { resolve: (src: Record<string, unknown>) => src[key] }),
          };
        }
        if (Object.keys(fields).length === 0) {
          fields._empty = { type: GraphQLBoolean, description: 'Placeholder: this object has no readable fields.' };
        }
        return fields;
      },
    });
    this.outputs.set(pointer, type);
    this.created.push(type);
    return type;
  }

  private objectInput(schema: JSONSchema, pointer: string): GraphQLInputObjectType {
    const existing = this.inputs.get(pointer);
    if (existing) return existing;
    const root = pointer === '';
    const type: GraphQLInputObjectType = new GraphQLInputObjectType({
      name: root ? this.claim(this.inputName) : this.claim(`${this.base}${pointerName(pointer)}Input`),
      description: descriptionOf(schema),
      fields: () => {
        const fields: GraphQLInputFieldConfigMap = {};
        if (root) {
          fields.apiVersion = { type: GraphQLString, description: `Defaults to "${this.model.apiVersion}".` };
          fields.kind = { type: GraphQLString, description: `Defaults to "${this.model.kind}".` };
          fields.metadata = { type: ObjectMetaInputType };
        }
        for (const [key, propSchema, at] of this.properties(schema, pointer)) {
          if (isObject(propSchema) && propSchema.readOnly === true) continue;
          const name = uniqueField(fields, fieldNameFor(key));
          const extensions: FieldExtensions = {};
          if (name !== key) extensions.jsonName = key;
          if (allowsNull(this.deref(propSchema, at).schema)) extensions.jsonNullable = true;
          fields[name] = {
            type: this.inputType(propSchema, at),
            description: descriptionOf(propSchema) ?? descriptionOf(this.deref(propSchema, at).schema),
            extensions: { ...extensions },
          };
        }
        if (Object.keys(fields).length === 0) {
          fields._empty = { type: GraphQLBoolean, description: 'Placeholder: this object has no writable fields.' };
        }
        return fields;
      },
    });
    this.inputs.set(pointer, type);
    this.created.push(type);
    return type;
  }
}

function descriptionOf(s: Schema): string | undefined {
  return typeof s === 'object' && typeof s.description === 'string' ? s.description : undefined;
}

function uniqueField(fields: object, name: string): string {
  let candidate = name;
  for (let n = 2; Object.hasOwn(fields, candidate); n++) candidate = `${name}${n}`;
  return candidate;
}

/** Evaluates the lazy field thunks so every reachable type is created. */
function forceFields(created: GraphQLNamedType[]): void {
  for (let i = 0; i < created.length; i++) {
    const t = created[i]!;
    if (t instanceof GraphQLObjectType || t instanceof GraphQLInputObjectType) t.getFields();
  }
}

/**
 * Module-level on purpose: keyed by the Model object, which is immutable and belongs to one
 * gateway (each registry compiles its own Models when a plugin registers), so two gateways in
 * one process never share an entry, and an entry goes when its Model does.
 */
const cache = new WeakMap<Model, ModelTypes>();

/**
 * The GraphQL types of one model, built from its JSON Schema once per registered Model (models
 * are immutable; GraphQL types may be shared by successive schemas).
 */
export function buildModelTypes(model: Model): ModelTypes {
  let types = cache.get(model);
  if (!types) {
    types = new ModelTypeBuilder(model).build();
    cache.set(model, types);
  }
  return types;
}

/**
 * Turns a coerced GraphQL input value back into the JSON the operations expect: restores
 * original property names and drops explicit nulls where the JSON Schema does not allow null
 * (a GraphQL client's `null` means "not set").
 */
export function inputToJson(type: GraphQLInputType, value: unknown): unknown {
  if (value === null || value === undefined) return value;
  if (isNonNullType(type)) return inputToJson(type.ofType, value);
  if (isListType(type)) {
    const item = type.ofType as GraphQLInputType;
    return Array.isArray(value) ? value.map((v) => inputToJson(item, v)) : inputToJson(item, value);
  }
  if (isInputObjectType(type) && isObject(value)) {
    const fields = type.getFields();
    const out: Record<string, unknown> = {};
    for (const [name, v] of Object.entries(value)) {
      const field = fields[name];
      const ext = (field?.extensions ?? {}) as FieldExtensions;
      if (v === null && !ext.jsonNullable) continue;
      out[ext.jsonName ?? name] = field ? inputToJson(field.type, v) : v;
    }
    return out;
  }
  return value;
}
