/**
 * GraphQL names of a model (docs/API.md §5). They derive from (group, version, kind, singular,
 * plural) alone, so registering one model never renames another's types or fields.
 *
 *   G = group's DNS labels split on `.` and `-`, each PascalCased, joined ("" → Core)
 *   V = version with its first letter capitalised
 *   type   = G V Kind                      PeopleExampleComV1alpha1Person
 *   prefix = lowerFirst(G) + '_' + version peopleExampleCom_v1alpha1
 */

/** Model identity as far as naming is concerned (a registry Model satisfies it). */
export interface NamedModel {
  group: string;
  version: string;
  kind: string;
  singular: string;
  plural: string;
}

export interface ModelNames {
  /** Output object type, e.g. `PeopleExampleComV1alpha1Person`. */
  type: string;
  /** Input object type used by create/update. */
  input: string;
  /** List envelope type. */
  list: string;
  /** Subscription payload type. */
  watchEvent: string;
  /** Field prefix, e.g. `peopleExampleCom_v1alpha1`. */
  prefix: string;
  queries: { get: string; list: string };
  mutations: { create: string; update: string; patch: string; delete: string; updateStatus: string };
  subscriptions: { watch: string };
}

export const GRAPHQL_NAME = /^[_A-Za-z][_0-9A-Za-z]*$/;

export const upperFirst = (s: string): string => (s ? s[0]!.toUpperCase() + s.slice(1) : s);
export const lowerFirst = (s: string): string => (s ? s[0]!.toLowerCase() + s.slice(1) : s);

/** `people.example.com` → `PeopleExampleCom`; `""` → `Core`. */
export function groupTypePrefix(group: string): string {
  if (group === '') return 'Core';
  return group
    .split(/[.-]/)
    .filter((label) => label !== '')
    .map(upperFirst)
    .join('');
}

/** `v1alpha1` → `V1alpha1`. */
export const versionTypePart = (version: string): string => upperFirst(version);

/** `peopleExampleCom_v1alpha1`. */
export const fieldPrefix = (m: Pick<NamedModel, 'group' | 'version'>): string =>
  `${lowerFirst(groupTypePrefix(m.group))}_${m.version}`;

/** `PeopleExampleComV1alpha1Person`. */
export const typeName = (m: Pick<NamedModel, 'group' | 'version' | 'kind'>): string =>
  `${groupTypePrefix(m.group)}${versionTypePart(m.version)}${m.kind}`;

export function modelNames(m: NamedModel): ModelNames {
  const type = typeName(m);
  const p = fieldPrefix(m);
  return {
    type,
    input: `${type}Input`,
    list: `${type}List`,
    watchEvent: `${type}WatchEvent`,
    prefix: p,
    queries: { get: `${p}_${m.singular}`, list: `${p}_${m.plural}` },
    mutations: {
      create: `${p}_create${m.kind}`,
      update: `${p}_update${m.kind}`,
      patch: `${p}_patch${m.kind}`,
      delete: `${p}_delete${m.kind}`,
      updateStatus: `${p}_update${m.kind}Status`,
    },
    subscriptions: { watch: `${p}_watch${upperFirst(m.plural)}` },
  };
}

/** Every root field name of a model, with the root type it lives on. */
export function rootFieldNames(names: ModelNames): { root: 'Query' | 'Mutation' | 'Subscription'; name: string }[] {
  return [
    ...Object.values(names.queries).map((name) => ({ root: 'Query' as const, name })),
    ...Object.values(names.mutations).map((name) => ({ root: 'Mutation' as const, name })),
    ...Object.values(names.subscriptions).map((name) => ({ root: 'Subscription' as const, name })),
  ];
}

/** A readable identity for error messages: `people.example.com/v1alpha1 Person`. */
export const describeModel = (m: Pick<NamedModel, 'group' | 'version' | 'kind'>): string =>
  `${m.group ? `${m.group}/` : ''}${m.version} ${m.kind}`;
