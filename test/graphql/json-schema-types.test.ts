/**
 * JSON Schema → GraphQL types (docs/API.md §5): objects, enums, scalars, lists, recursion via
 * $ref, free-form maps, and the mapping of sanitised property names in both directions.
 */
import { describe, expect, it } from 'vitest';
import {
  GraphQLEnumType,
  GraphQLInputObjectType,
  GraphQLObjectType,
  printType,
  type GraphQLField,
  type GraphQLNamedType,
} from 'graphql';
import { buildModelTypes, inputToJson } from '../../src/graphql/json-schema-types.js';
import { compileModel } from '../../src/registry/compile.js';
import type { JSONSchema } from '../../src/registry/model.js';

const build = (schema: JSONSchema) =>
  buildModelTypes(compileModel({ group: 'test.example.com', version: 'v1', kind: 'Thing', schema }));
const byName = (types: readonly GraphQLNamedType[]) => new Map(types.map((t) => [t.name, t]));
const print = (types: readonly GraphQLNamedType[], name: string) => {
  const t = byName(types).get(name);
  if (!t) throw new Error(`no type ${name}; have ${types.map((x) => x.name).join(', ')}`);
  return printType(t);
};
const lines = (...l: string[]) => l.join('\n');

describe('JSON Schema to GraphQL types', () => {
  it('maps nested objects, scalars, enums and lists', () => {
    const t = build({
      properties: {
        spec: {
          type: 'object',
          properties: {
            name: { type: 'string', description: 'Full name.' },
            age: { type: 'integer' },
            score: { type: 'number' },
            big: { type: 'integer', format: 'int64' },
            active: { type: 'boolean' },
            color: { type: 'string', enum: ['RED', 'GREEN'] },
            mime: { type: 'string', enum: ['text/plain', 'image/png'] },
            tags: { type: 'array', items: { type: 'string' } },
            maybe: { type: ['string', 'null'] },
            address: { type: 'object', properties: { city: { type: 'string' }, zip: { type: 'string' } } },
            points: { type: 'array', items: { type: 'object', properties: { x: { type: 'number' } } } },
          },
        },
      },
    });
    const types = t.namedTypes();
    expect(print(types, 'TestExampleComV1ThingSpec')).toBe(
      lines(
        'type TestExampleComV1ThingSpec {',
        '  """Full name."""',
        '  name: String',
        '  age: Int',
        '  score: Float',
        '  big: Float',
        '  active: Boolean',
        '  color: TestExampleComV1ThingSpecColor',
        '  mime: String',
        '  tags: [String!]',
        '  maybe: String',
        '  address: TestExampleComV1ThingSpecAddress',
        '  points: [TestExampleComV1ThingSpecPointsItem!]',
        '}',
      ),
    );
    expect(print(types, 'TestExampleComV1ThingSpecColor')).toBe(lines('enum TestExampleComV1ThingSpecColor {', '  RED', '  GREEN', '}'));
    expect(print(types, 'TestExampleComV1ThingSpecAddress')).toContain('city: String');
    expect(print(types, 'TestExampleComV1ThingSpecPointsItem')).toContain('x: Float');
    // inputs mirror outputs, sharing the enum
    expect(print(types, 'TestExampleComV1ThingSpecInput')).toContain('color: TestExampleComV1ThingSpecColor');
    expect(print(types, 'TestExampleComV1ThingSpecInput')).toContain('address: TestExampleComV1ThingSpecAddressInput');
    expect(print(types, 'TestExampleComV1ThingSpecInput')).toContain('points: [TestExampleComV1ThingSpecPointsItemInput!]');
  });

  it('wraps the root with id (Node), apiVersion, kind and ObjectMeta', () => {
    const t = build({ properties: { spec: { type: 'object', properties: { a: { type: 'string' } } } } });
    expect(t.output.name).toBe('TestExampleComV1Thing');
    expect(Object.keys(t.output.getFields())).toEqual(['id', 'apiVersion', 'kind', 'metadata', 'spec', 'status']);
    expect(t.output.getInterfaces().map(String)).toEqual(['Node']);
    expect(String(t.output.getFields().metadata!.type)).toBe('ObjectMeta');
    expect(String(t.output.getFields().status!.type)).toBe('JSON');
    expect(t.input.name).toBe('TestExampleComV1ThingInput');
    expect(String(t.input.getFields().metadata!.type)).toBe('ObjectMetaInput');
    expect(String(t.statusInput)).toBe('JSON');
    // a nested copy without apiVersion/kind still resolves them
    const f = t.output.getFields();
    expect((f.apiVersion as GraphQLField<object, unknown>).resolve!({}, {}, undefined, undefined as never)).toBe('test.example.com/v1');
    expect((f.kind as GraphQLField<object, unknown>).resolve!({}, {}, undefined, undefined as never)).toBe('Thing');
  });

  it('types a typed status for the status mutation', () => {
    const t = build({ properties: { status: { type: 'object', properties: { phase: { type: 'string', enum: ['Ready', 'Failed'] } } } } });
    expect(String(t.statusInput)).toBe('TestExampleComV1ThingStatusInput');
  });

  it('turns $defs into named types and recursion into self-reference', () => {
    const t = build({
      properties: {
        spec: { $ref: '#/$defs/Node' },
        status: { type: 'object', properties: { parent: { $ref: '#' } } },
      },
      $defs: {
        Node: {
          type: 'object',
          description: 'A tree node.',
          properties: {
            label: { type: 'string' },
            children: { type: 'array', items: { $ref: '#/$defs/Node' } },
            owner: { $ref: '#' },
          },
        },
      },
    });
    const types = t.namedTypes();
    expect(print(types, 'TestExampleComV1ThingNode')).toBe(
      lines(
        '"""A tree node."""',
        'type TestExampleComV1ThingNode {',
        '  label: String',
        '  children: [TestExampleComV1ThingNode!]',
        '  owner: TestExampleComV1Thing',
        '}',
      ),
    );
    expect(String(t.output.getFields().spec!.type)).toBe('TestExampleComV1ThingNode');
    expect(print(types, 'TestExampleComV1ThingStatus')).toContain('parent: TestExampleComV1Thing\n');
    expect(print(types, 'TestExampleComV1ThingNodeInput')).toContain('children: [TestExampleComV1ThingNodeInput!]');
    expect(print(types, 'TestExampleComV1ThingNodeInput')).toContain('owner: TestExampleComV1ThingInput');
    // each pointer is built once
    expect(types.filter((x) => x.name.startsWith('TestExampleComV1ThingNode')).map((x) => x.name).sort()).toEqual([
      'TestExampleComV1ThingNode',
      'TestExampleComV1ThingNodeInput',
    ]);
  });

  it('maps free-form maps and untyped values to JSON', () => {
    const t = build({
      properties: {
        spec: {
          type: 'object',
          properties: {
            labels: { type: 'object', additionalProperties: { type: 'string' } },
            anything: { type: 'object' },
            open: { type: 'object', properties: { a: { type: 'string' } }, additionalProperties: true },
            either: { oneOf: [{ type: 'string' }, { type: 'integer' }] },
            mixed: { type: ['string', 'integer'] },
            tuple: { type: 'array', prefixItems: [{ type: 'string' }] },
            bag: { type: 'array' },
          },
        },
      },
    });
    expect(print(t.namedTypes(), 'TestExampleComV1ThingSpec')).toBe(
      lines(
        'type TestExampleComV1ThingSpec {',
        '  labels: JSON',
        '  anything: JSON',
        '  open: JSON',
        '  either: JSON',
        '  mixed: JSON',
        '  tuple: JSON',
        '  bag: [JSON]',
        '}',
      ),
    );
  });

  it('keeps write-only fields out of outputs and read-only fields out of inputs', () => {
    const t = build({
      properties: {
        spec: {
          type: 'object',
          properties: { password: { type: 'string', writeOnly: true }, id: { type: 'string', readOnly: true }, name: { type: 'string' } },
        },
      },
    });
    const types = byName(t.namedTypes());
    expect(Object.keys((types.get('TestExampleComV1ThingSpec') as GraphQLObjectType).getFields())).toEqual(['id', 'name']);
    expect(Object.keys((types.get('TestExampleComV1ThingSpecInput') as GraphQLInputObjectType).getFields())).toEqual([
      'password',
      'name',
    ]);
  });

  it('sanitises property names and maps them back in both directions', () => {
    const t = build({
      properties: {
        spec: {
          type: 'object',
          properties: {
            'x-y': { type: 'string' },
            x_y: { type: 'string' },
            '1st': { type: 'integer' },
            nested: { type: 'object', properties: { 'a.b': { type: 'boolean' } } },
          },
        },
      },
    });
    const types = byName(t.namedTypes());
    const spec = (types.get('TestExampleComV1ThingSpec') as GraphQLObjectType).getFields();
    expect(Object.keys(spec)).toEqual(['x_y', 'x_y2', '_1st', 'nested']);
    expect(spec.x_y!.resolve!({ 'x-y': 'dash', x_y: 'underscore' }, {}, undefined, undefined as never)).toBe('dash');
    expect(spec.x_y2!.resolve!({ 'x-y': 'dash', x_y: 'underscore' }, {}, undefined, undefined as never)).toBe('underscore');
    const json = inputToJson(t.input, {
      metadata: { name: 'a', version: null },
      spec: { x_y: 'dash', x_y2: 'underscore', _1st: 1, nested: { a_b: true } },
    });
    expect(json).toEqual({ metadata: { name: 'a' }, spec: { 'x-y': 'dash', x_y: 'underscore', '1st': 1, nested: { 'a.b': true } } });
  });

  it('drops explicit nulls unless the schema allows null', () => {
    const t = build({
      properties: { spec: { type: 'object', properties: { a: { type: 'string' }, b: { type: ['string', 'null'] }, c: { type: 'object' } } } },
    });
    expect(inputToJson(t.input, { spec: { a: null, b: null, c: { keep: null } } })).toEqual({ spec: { b: null, c: { keep: null } } });
  });

  it('falls back to String for enums whose values are not GraphQL names', () => {
    const t = build({ properties: { spec: { type: 'object', properties: { v: { enum: ['true', 'false'] }, w: { enum: ['', 'A'] } } } } });
    const spec = byName(t.namedTypes()).get('TestExampleComV1ThingSpec') as GraphQLObjectType;
    expect(String(spec.getFields().v!.type)).toBe('String');
    expect(String(spec.getFields().w!.type)).toBe('String');
    expect(t.namedTypes().some((x) => x instanceof GraphQLEnumType)).toBe(false);
  });

  it('numbers clashing generated names instead of failing', () => {
    const t = build({
      properties: {
        spec: { type: 'object', properties: { fooBar: { type: 'object', properties: { a: { type: 'string' } } }, foo: { type: 'object', properties: { bar: { type: 'object', properties: { b: { type: 'string' } } } } } } },
      },
      $defs: { List: { type: 'object', properties: { c: { type: 'string' } } } },
    });
    const names = t.namedTypes().map((x) => x.name);
    expect(names).toContain('TestExampleComV1ThingSpecFooBar');
    expect(names).toContain('TestExampleComV1ThingSpecFooBar2');
    expect(new Set(names).size).toBe(names.length);
  });
});
