/**
 * GraphQL naming (docs/API.md §5): names derive from (group, version, kind) alone; two models
 * that would share a name are refused with a clear error.
 */
import { describe, expect, it } from 'vitest';
import { getNamedType, type GraphQLObjectType } from 'graphql';
import { buildGatewaySchema, checkNames, SchemaNameClash } from '../../src/graphql/build-schema.js';
import { fieldPrefix, groupTypePrefix, modelNames, typeName } from '../../src/graphql/naming.js';
import type { ModelEntry } from '../../src/operations/index.js';
import { compileModel } from '../../src/registry/compile.js';
import type { ModelDeclaration } from '../../src/registry/model.js';
import { LIMITS } from '../../src/limits.js';

const model = (decl: Partial<ModelDeclaration> & { group: string; kind: string }) =>
  compileModel({ version: 'v1alpha1', ...decl }, { platform: true });
const entry = (m: ReturnType<typeof model>): ModelEntry => ({ model: m, store: undefined as never, limits: LIMITS });

describe('naming', () => {
  it('derives G, V, type and prefix as the contract spells them', () => {
    expect(groupTypePrefix('people.example.com')).toBe('PeopleExampleCom');
    expect(groupTypePrefix('my-app.example.io')).toBe('MyAppExampleIo');
    expect(groupTypePrefix('')).toBe('Core');
    const person = { group: 'people.example.com', version: 'v1alpha1', kind: 'Person' };
    expect(typeName(person)).toBe('PeopleExampleComV1alpha1Person');
    expect(fieldPrefix(person)).toBe('peopleExampleCom_v1alpha1');
    expect(fieldPrefix({ group: '', version: 'v1alpha1' })).toBe('core_v1alpha1');
  });

  it('names every field of a model', () => {
    const names = modelNames({ group: 'people.example.com', version: 'v1alpha1', kind: 'Person', singular: 'person', plural: 'persons' });
    expect(names).toMatchObject({
      type: 'PeopleExampleComV1alpha1Person',
      input: 'PeopleExampleComV1alpha1PersonInput',
      list: 'PeopleExampleComV1alpha1PersonList',
      watchEvent: 'PeopleExampleComV1alpha1PersonWatchEvent',
      queries: { get: 'peopleExampleCom_v1alpha1_person', list: 'peopleExampleCom_v1alpha1_persons' },
      mutations: {
        create: 'peopleExampleCom_v1alpha1_createPerson',
        update: 'peopleExampleCom_v1alpha1_updatePerson',
        patch: 'peopleExampleCom_v1alpha1_patchPerson',
        delete: 'peopleExampleCom_v1alpha1_deletePerson',
        updateStatus: 'peopleExampleCom_v1alpha1_updatePersonStatus',
      },
      subscriptions: { watch: 'peopleExampleCom_v1alpha1_watchPersons' },
    });
  });

  it('gives two Person models in different groups separate types and fields', () => {
    const people = model({ group: 'people.example.com', kind: 'Person', schema: { properties: { spec: { type: 'object', properties: { name: { type: 'string' } } } } } });
    const crm = model({ group: 'crm.example.net', version: 'v1', kind: 'Person', plural: 'people', schema: { properties: { spec: { type: 'object', properties: { email: { type: 'string' } } } } } });
    const schema = buildGatewaySchema([entry(people), entry(crm)]);
    const q = schema.getQueryType()!.getFields();
    expect(getNamedType(q.peopleExampleCom_v1alpha1_person!.type).name).toBe('PeopleExampleComV1alpha1Person');
    expect(getNamedType(q.crmExampleNet_v1_person!.type).name).toBe('CrmExampleNetV1Person');
    expect(q.crmExampleNet_v1_people).toBeDefined();
    const m = schema.getMutationType()!.getFields();
    expect(Object.keys(m)).toEqual(expect.arrayContaining(['peopleExampleCom_v1alpha1_createPerson', 'crmExampleNet_v1_createPerson']));
    expect(schema.getSubscriptionType()!.getFields().crmExampleNet_v1_watchPeople).toBeDefined();
    const peopleSpec = (schema.getType('PeopleExampleComV1alpha1PersonSpec') as GraphQLObjectType).getFields();
    const crmSpec = (schema.getType('CrmExampleNetV1PersonSpec') as GraphQLObjectType).getFields();
    expect(Object.keys(peopleSpec)).toEqual(['name']);
    expect(Object.keys(crmSpec)).toEqual(['email']);
  });

  it('does not rename existing names when another model is added', () => {
    const a = model({ group: 'a.example.com', kind: 'Thing' });
    const before = buildGatewaySchema([entry(a)]);
    const after = buildGatewaySchema([entry(model({ group: 'b.example.com', kind: 'Thing' })), entry(a)]);
    for (const t of Object.keys(before.getTypeMap())) expect(after.getType(t)).toBeDefined();
  });

  it('refuses two groups that collapse to the same G', () => {
    const dotted = model({ group: 'my.app.com', kind: 'Person' });
    const dashed = model({ group: 'my-app.com', kind: 'Person' });
    expect(() => checkNames([dotted, dashed])).toThrow(SchemaNameClash);
    expect(() => checkNames([dotted, dashed])).toThrow(/my\.app\.com\/v1alpha1 Person and my-app\.com\/v1alpha1 Person would both define GraphQL (type|field)/);
    expect(() => buildGatewaySchema([entry(dotted), entry(dashed)])).toThrow(SchemaNameClash);
  });

  it('refuses a kind whose type name another model already derives for a nested type', () => {
    const person = model({ group: 'x.example.com', kind: 'Person', schema: { properties: { spec: { type: 'object', properties: { a: { type: 'string' } } } } } });
    const personSpec = model({ group: 'x.example.com', kind: 'PersonSpec', singular: 'personspec' });
    expect(() => checkNames([person, personSpec])).toThrow(/GraphQL type XExampleComV1alpha1PersonSpec/);
  });

  it('refuses names that are not valid GraphQL names', () => {
    const digits = model({ group: '3d.example.com', kind: 'Shape' });
    expect(() => checkNames([digits])).toThrow(/is not a valid GraphQL name/);
    const dashed = model({ group: 'x.example.com', kind: 'Shape', singular: 'sha-pe', plural: 'sha-pes' });
    expect(() => checkNames([dashed])).toThrow(/"xExampleCom_v1alpha1_sha-pe" is not a valid GraphQL name/);
  });

  it('accepts the same kind in different groups', () => {
    const a = model({ group: 'a.example.com', kind: 'Thing' });
    expect(() => checkNames([a, model({ group: 'b.example.com', kind: 'Thing' })])).not.toThrow();
  });
});
