import { describe, expect, it } from 'vitest';
import { compileModel, defaultPlural, RegistrationError } from '../../src/registry/compile.js';
import type { ModelDeclaration } from '../../src/registry/model.js';

const base: ModelDeclaration = { group: 'people.example.com', version: 'v1alpha1', kind: 'Person' };

describe('compileModel', () => {
  it('derives singular, plural, apiVersion and storage key', () => {
    const m = compileModel(base);
    expect(m).toMatchObject({ singular: 'person', plural: 'persons', apiVersion: 'people.example.com/v1alpha1' });
    expect(m.storage.key).toBe('people.example.com/v1alpha1/persons');
    expect(m.indexes.map((i) => i.name)).toEqual([
      'metadata.name',
      'metadata.labels',
      'metadata.creationTimestamp',
      'metadata.deletionTimestamp',
    ]);
  });

  it.each(['', 'svc.run', 'plugin.svc.run', 'a.b.svc.run'])('refuses the reserved group "%s" for plugins', (group) => {
    expect(() => compileModel({ ...base, group }, { plugin: 'p' })).toThrow(RegistrationError);
    expect(() => compileModel({ ...base, group }, { plugin: 'p' })).toThrow(/reserved/);
  });

  it('marks path indexes over integer/number fields numeric (through $ref, arrays and nullable types), and says so in the fingerprint', () => {
    const m = compileModel({
      ...base,
      schema: {
        properties: {
          spec: { $ref: '#/$defs/Spec' },
          status: { type: 'object', properties: { score: { type: ['number', 'null'] }, label: { type: 'string' } } },
        },
        $defs: {
          Spec: {
            type: 'object',
            properties: {
              year: { type: 'integer' },
              name: { type: 'string' },
              scores: { type: 'array', items: { type: 'number' } },
              other: { $ref: '#/$defs/Spec' },
              loose: {},
            },
          },
        },
      },
      indexes: [
        { name: 'spec.year', path: 'spec.year' },
        { name: 'spec.name', path: 'spec.name' },
        { name: 'spec.scores', path: 'spec.scores' },
        { name: 'spec.other.year', path: 'spec.other.year' },
        { name: 'spec.loose', path: 'spec.loose' },
        { name: 'spec.missing', path: 'spec.missing' },
        { name: 'status.score', path: 'status.score' },
        { name: 'status.label', path: 'status.label' },
      ],
    });
    const numeric = m.storage.indexes.filter((d) => d.numeric).map((d) => d.name);
    expect(numeric).toEqual(['spec.year', 'spec.scores', 'spec.other.year', 'status.score']);
    expect(m.storage.indexes.find((d) => d.name === 'spec.year')!.fingerprint).toMatch(/\|type=number$/);
    expect(m.storage.indexes.find((d) => d.name === 'spec.name')!.fingerprint).not.toMatch(/type=/);
  });

  it('marks path indexes over one string field text (through $ref and nullable types, never through an array); the fingerprint stays the same', () => {
    const m = compileModel({
      ...base,
      schema: {
        properties: {
          spec: { $ref: '#/$defs/Spec' },
          status: { type: 'object', properties: { phase: { type: ['string', 'null'] }, count: { type: 'integer' } } },
        },
        $defs: {
          Spec: {
            type: 'object',
            properties: {
              name: { type: 'string', maxLength: 40 },
              kind: { type: 'string', enum: ['a', 'b'] },
              tags: { type: 'array', items: { type: 'string' } },
              either: { type: ['string', 'array'], items: { type: 'string' } },
              items: { type: 'array', items: { type: 'object', properties: { name: { type: 'string' } } } },
              mixed: { type: ['string', 'integer'] },
              loose: {},
              map: { type: 'object', additionalProperties: { type: 'string' } },
              other: { $ref: '#/$defs/Spec' },
            },
          },
        },
      },
      indexes: [
        'spec.name', 'spec.kind', 'spec.tags', 'spec.either', 'spec.items.name', 'spec.mixed', 'spec.loose', 'spec.map.x',
        'spec.other.name', 'spec.missing', 'status.phase', 'status.count',
      ].map((path) => ({ name: path, path })),
    });
    const text = m.storage.indexes.filter((d) => d.text).map((d) => d.name);
    expect(text).toEqual(['spec.name', 'spec.kind', 'spec.other.name', 'status.phase']);
    // The values are the same either way: the fingerprint does not change (no reindex on the embedded store).
    expect(m.storage.indexes.find((d) => d.name === 'spec.name')!.fingerprint).toBe('path:spec.name|unique=false|order=ASC');
    expect(m.storage.indexes.find((d) => d.name === 'spec.tags')!.fingerprint).toBe('path:spec.tags|unique=false|order=ASC');
    // The defaults and indexFunc indexes are never text indexes.
    const f = compileModel({ ...base, schema: m.schema, indexes: [{ name: 'spec.upper', indexFunc: (o) => String((o.spec as { name?: string } | undefined)?.name).toUpperCase() }] });
    expect(f.storage.indexes.filter((d) => d.text)).toEqual([]);
  });

  it('lets the platform use the core group', () => {
    expect(compileModel({ ...base, group: '' }, { platform: true }).apiVersion).toBe('v1alpha1');
  });

  it.each([
    [{ version: 'one' }, /version/],
    [{ kind: 'person' }, /kind/],
    [{ plural: 'Persons' }, /plural/],
    [{ group: 'Not_A_Domain' }, /group/],
    [{ schema: { properties: { spec: { type: 'nonsense' } } } }, /invalid schema/],
    [{ indexes: [{ name: 'metadata.labels', path: 'metadata.labels' }] }, /default index/],
    [{ indexes: [{ name: 'a', path: 'spec.a' }, { name: 'a', path: 'spec.b' }] }, /duplicate/],
    [{ indexes: [{ name: 'a' }] }, /exactly one of path or indexFunc/],
    [{ indexes: [{ name: 'a', path: 'spec..a' }] }, /path/],
    [{ indexes: [{ name: 'a', path: 'spec.a', order: 'UP' as never }] }, /order/],
  ] as [Partial<ModelDeclaration>, RegExp][])('refuses %j', (patch, message) => {
    expect(() => compileModel({ ...base, ...patch })).toThrow(message);
  });

  it('extracts single- and multi-valued index values as strings', () => {
    const m = compileModel({
      ...base,
      indexes: [
        { name: 'spec.name', path: 'spec.name' },
        { name: 'spec.age', path: 'spec.age' },
        { name: 'tags', path: 'spec.tags' },
        { name: 'emails', path: 'spec.contacts.email' },
        { name: 'computed', indexFunc: (o) => ((o.spec as { age?: number })?.age ?? 0) >= 18 ? 'adult' : undefined },
      ],
    });
    const values = m.storage.indexValues({
      apiVersion: m.apiVersion,
      kind: 'Person',
      metadata: { name: 'ada', labels: { 'a.example.com/k': 'v' }, creationTimestamp: '2026-01-01T00:00:00.000Z' },
      spec: { name: 'Ada', age: 36, tags: ['x', 'y', 'x'], contacts: [{ email: 'a@x' }, { email: 'b@x' }, {}] },
    });
    expect(values).toEqual({
      'metadata.name': ['ada'],
      'metadata.labels': ['a.example.com/k', 'a.example.com/k=v'],
      'metadata.creationTimestamp': ['2026-01-01T00:00:00.000Z'],
      'metadata.deletionTimestamp': [],
      'spec.name': ['Ada'],
      'spec.age': ['36'],
      tags: ['x', 'y'],
      emails: ['a@x', 'b@x'],
      computed: ['adult'],
    });
  });

  it('validates against the schema with $defs and self-reference, listing every field', () => {
    const m = compileModel({
      ...base,
      schema: {
        required: ['spec'],
        properties: { spec: { $ref: '#/$defs/S' } },
        $defs: {
          S: {
            type: 'object',
            properties: { name: { type: 'string', maxLength: 3 }, friend: { $ref: '#' } },
          },
        },
      },
    });
    expect(m.validate({ spec: { name: 'abc' } })).toEqual([]);
    const errors = m.validate({ spec: { name: 'abcd', friend: { spec: { name: 'toolong' } } } });
    expect(errors.map((e) => e.field).sort()).toEqual(['spec.friend.spec.name', 'spec.name']);
    expect(m.validate({})).toEqual([{ field: 'spec', message: 'is required' }]);
  });

  it('pluralises simply', () => {
    expect([defaultPlural('policy'), defaultPlural('class'), defaultPlural('box'), defaultPlural('key')]).toEqual([
      'policies',
      'classes',
      'boxes',
      'keys',
    ]);
  });
});
