/** fast-check arbitraries for the fuzz tests (fuzz.test.ts): hostile and half-valid client input. */
import fc from 'fast-check';

export const BASE = '/apis/people.example.com/v1alpha1/persons';

export const SEGMENTS = ['', '.', '..', '%2e', '%2E%2e', '%2f', '%2F..', 'persons', 'people.example.com', 'v1alpha1', 'apis', 'api', 'status', 'target', 'x', '%00', '%zz', '~', 'ü', '%C3%BC', '*', '-', 'watch'];
export const segment = fc.oneof(fc.constantFrom(...SEGMENTS), fc.stringMatching(/^[A-Za-z0-9._~%-]{0,8}$/));
export const pathArb = fc.oneof(
  fc.array(segment, { maxLength: 8 }).map((s) => `/${s.join('/')}`),
  fc.array(segment, { maxLength: 4 }).map((s) => `${BASE}/${s.join('/')}`),
  fc.array(segment, { maxLength: 3 }).map((s) => `/apis/people.example.com/${s.join('/')}`),
);
export const methodArb = fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS');

export const SELECTOR_CHARS = 'ab.k/=!(),~<>\\ -_in0xz'.split('');
export const selectorArb = fc.oneof(
  fc.string({ unit: fc.constantFrom(...SELECTOR_CHARS), maxLength: 40 }),
  fc.constantFrom('a.example.com/k=v', 'k in (a,b)', 'k notin (a)', '!k', 'k', 'k=(a,b)', 'name=target', 'spec.name=Ada', 'metadata.name!=x', 'x,', ',', '()'),
);
export const listParamsArb = fc.record(
  {
    labelSelector: fc.array(selectorArb, { maxLength: 3 }),
    fieldSelector: fc.array(selectorArb, { maxLength: 3 }),
    sort: fc.array(fc.oneof(fc.constantFrom('metadata.name,asc', 'spec.name,desc', 'name', '-name', 'spec.age', 'x,y,z', ',asc', 'metadata.creationTimestamp,DESC'), fc.string({ maxLength: 20 })), { maxLength: 4 }),
    page: fc.oneof(fc.integer({ min: -5, max: 1e6 }).map(String), fc.constantFrom('', '1e3', '0x10', '1.5', '99999999999999999999', 'a')),
    size: fc.oneof(fc.integer({ min: -5, max: 20_000 }).map(String), fc.constantFrom('', '1e3', ' 5', 'NaN')),
  },
  { requiredKeys: [] },
);

export const nameArb = fc.oneof(
  fc.constantFrom('fz', 'target', 'A', '-x', 'x-', '', 'a'.repeat(254), 'ok-1'),
  { weight: 6, arbitrary: fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,10}[a-z0-9])?$/) },
  fc.string({ maxLength: 12 }),
);
export const labelsArb = fc.dictionary(
  fc.oneof({ weight: 4, arbitrary: fc.constantFrom('a.example.com/k', 'b.example.com/j', 'k') }, fc.constantFrom('svc.run/x', '/x', 'a/b/c'), fc.string({ maxLength: 10 })),
  fc.oneof({ weight: 4, arbitrary: fc.stringMatching(/^[a-z0-9]{0,8}$/) }, fc.string({ maxLength: 10 }), fc.integer()),
  { maxKeys: 3 },
);
export const personArb: fc.Arbitrary<unknown> = fc.letrec<{ person: unknown }>((tie) => ({
  person: fc.record(
    {
      apiVersion: fc.oneof({ weight: 8, arbitrary: fc.constant('people.example.com/v1alpha1') }, fc.constantFrom('v1', 1)),
      kind: fc.oneof({ weight: 8, arbitrary: fc.constant('Person') }, fc.constant('Other')),
      metadata: fc.record(
        {
          name: nameArb,
          generateName: fc.constantFrom('gen-', '', 'Bad_'),
          labels: labelsArb,
          annotations: labelsArb,
          finalizers: fc.array(fc.oneof(fc.constantFrom('a.example.com/f'), fc.string({ maxLength: 6 })), { maxLength: 3 }),
          version: fc.oneof(fc.integer(), fc.string()),
          deletionTimestamp: fc.constantFrom('2020-01-01T00:00:00Z'),
        },
        { requiredKeys: [] },
      ),
      spec: fc.oneof(
        fc.record(
          {
            name: fc.oneof(fc.string({ maxLength: 120 }), fc.integer()),
            age: fc.oneof(fc.integer({ min: -10, max: 200 }), fc.double(), fc.string({ maxLength: 3 })),
            gender: fc.constantFrom('MALE', 'FEMALE', 'X', 1, null),
            otherPerson: fc.oneof({ depthSize: 'small' }, fc.constant(null), tie('person')),
          },
          { requiredKeys: [] },
        ),
        fc.jsonValue({ maxDepth: 3 }),
      ),
      status: fc.jsonValue({ maxDepth: 2 }),
    },
    { requiredKeys: [] },
  ),
})).person;
export const bodyArb = fc.oneof(
  { weight: 4, arbitrary: personArb.map((v) => JSON.stringify(v)) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)) },
  { weight: 1, arbitrary: fc.string({ maxLength: 40 }) },
);

export const PATCH_PATHS = ['/spec/name', '/spec/age', '/spec', '/metadata/name', '/metadata/labels/a.example.com~1k', '/metadata/version', '', '/', '/spec/otherPerson/spec/name', '/status', '/metadata/finalizers/-', '/metadata/finalizers/0', '/x/y', '/spec/name/0'];
export const jsonPatchArb = fc
  .array(
    fc.record(
      {
        op: fc.constantFrom('add', 'remove', 'replace', 'move', 'copy', 'test', 'bogus'),
        path: fc.oneof(fc.constantFrom(...PATCH_PATHS), fc.string({ maxLength: 10 })),
        from: fc.constantFrom(...PATCH_PATHS),
        value: fc.jsonValue({ maxDepth: 3 }),
      },
      { requiredKeys: ['op'] },
    ),
    { maxLength: 4 },
  )
  .map((ops) => JSON.stringify(ops));
export const mergePatchArb = fc.oneof(
  personArb.map((v) => JSON.stringify(v)),
  fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)),
);

export const GQL_TOKENS = ['{', '}', '(', ')', ':', ',', '$x', '$p', 'query', 'mutation', 'subscription', 'fragment', 'on', '...', '@auth', '@skip(if: true)', '__typename', '__schema', 'types', 'name', 'metadata', 'spec', 'items', 'total', 'peopleExampleCom_v1alpha1_persons', 'peopleExampleCom_v1alpha1_person', 'peopleExampleCom_v1alpha1_createPerson', 'peopleExampleCom_v1alpha1_patchPerson', 'peopleExampleCom_v1alpha1_deletePerson', 'object', 'patch', 'size', 'labelSelector', '"target"', '"x"', '1', '-1', 'null', 'true', '[', ']', '=', 'JSON', 'String!', 'Int', '#c'];
export const P = 'peopleExampleCom_v1alpha1';
export const TEMPLATES = [
  `mutation($p: JSON!) { ${P}_patchPerson(name: "target", patch: $p) { metadata { name version } } }`,
  `query($l: [String!], $f: [String!], $s: Int, $o: [String!]) { ${P}_persons(labelSelector: $l, fieldSelector: $f, size: $s, sort: $o) { total items { metadata { name } } } }`,
  `query($n: String!) { ${P}_person(name: $n) { metadata { name } spec { name age } } }`,
  `mutation($n: String!) { ${P}_deletePerson(name: $n) { metadata { name } } }`,
];
export const graphqlArb = fc.oneof(
  fc.record({
    query: fc.oneof(fc.array(fc.constantFrom(...GQL_TOKENS), { maxLength: 30 }).map((t) => t.join(' ')), fc.string({ maxLength: 60 })),
    variables: fc.oneof(fc.constant(undefined), fc.dictionary(fc.constantFrom('x', 'p', 'o'), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 2 })),
    operationName: fc.oneof(fc.constant(undefined), fc.string({ maxLength: 5 })),
  }),
  fc.record({
    query: fc.constantFrom(...TEMPLATES),
    variables: fc.record(
      {
        p: fc.oneof(mergePatchArb.map((t) => JSON.parse(t) as unknown), fc.jsonValue({ maxDepth: 3 })),
        l: fc.array(selectorArb, { maxLength: 2 }),
        f: fc.array(selectorArb, { maxLength: 2 }),
        s: fc.oneof(fc.integer({ min: -2, max: 20_000 }), fc.string({ maxLength: 3 })),
        o: fc.array(fc.string({ maxLength: 12 }), { maxLength: 2 }),
        n: fc.oneof(nameArb, fc.integer()),
      },
      { requiredKeys: [] },
    ),
  }),
);

/**
 * Keys a document store treats specially: `.` (path separator), a leading `$` (operators), `%`
 * (the escape character of the MongoDB layout), the empty key, `_id`/`_svc`, escape look-alikes.
 */
export const awkwardKeyArb = fc.oneof(
  fc.constantFrom('', '.', '..', '$', '$x', '$$', 'a.b', '.a', 'a.', '%', '%%', '%2E', '%25', '%24', '%00', '%[]', '%5F', '_id', '_svc', 'a$', '$a.b%', 'ü.ö', 'x'),
  fc.string({ unit: fc.constantFrom('.', '$', '%', 'a', '2', 'E', '_', '[', ']'), maxLength: 6 }),
);
/** A free-form JSON value whose maps use awkward keys at every depth, arrays in arrays included. */
export const awkwardValueArb: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.oneof(fc.string({ maxLength: 6 }), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean(), fc.constant(null)),
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(awkwardKeyArb, tie('value'), { maxKeys: 4 }),
  ),
})).value;
export const awkwardMapArb = fc.dictionary(awkwardKeyArb, awkwardValueArb, { minKeys: 1, maxKeys: 5 });
