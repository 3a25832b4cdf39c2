/**
 * GraphQL over HTTP against a real gateway (docs/API.md §5): CRUD through the shared operations,
 * lists with selectors and paging, error codes, @auth, `me`, limits and masking.
 */
import { describe, expect, it } from 'vitest';
import { adminAuth, call } from '../helpers/gateway.js';
import { codes, gql, useAuthorizedGateway } from './helpers.js';

const P = 'peopleExampleCom_v1alpha1';
const PERSON = /* GraphQL */ `
  fragment P on PeopleExampleComV1alpha1Person {
    apiVersion
    kind
    metadata { name version labels creationTimestamp deletionTimestamp }
    spec { name age gender otherPerson { spec { name } } }
    status { phase }
  }
`;
const CREATE = /* GraphQL */ `
  mutation ($o: PeopleExampleComV1alpha1PersonInput!) { ${P}_createPerson(object: $o) { ...P } }
  ${PERSON}
`;
const GET = /* GraphQL */ `query ($n: String!) { ${P}_person(name: $n) { ...P } } ${PERSON}`;
const person = (name: string, spec: Record<string, unknown> = { name: 'Ada', age: 36 }, labels?: Record<string, string>) => ({
  metadata: { name, ...(labels ? { labels } : {}) },
  spec,
});

describe('GraphQL over HTTP', () => {
  const env = useAuthorizedGateway();
  const { authz } = env;

  it('creates, reads, updates, patches, sets status and deletes a Person', async () => {
    const created = await gql(env.gw, CREATE, {
      o: person('ada', { name: 'Ada', age: 36, gender: 'FEMALE', otherPerson: { spec: { name: 'Charles' } } }),
    });
    expect(created.body.errors).toBeUndefined();
    const ada = created.body.data[`${P}_createPerson`];
    expect(ada).toMatchObject({
      apiVersion: 'people.example.com/v1alpha1',
      kind: 'Person',
      metadata: { name: 'ada', version: 1, deletionTimestamp: null },
      spec: { name: 'Ada', age: 36, gender: 'FEMALE', otherPerson: { spec: { name: 'Charles' } } },
    });

    // same data as REST
    const rest = await call(env.gw, 'GET', '/apis/people.example.com/v1alpha1/persons/ada');
    expect(rest.body.metadata.creationTimestamp).toBe(ada.metadata.creationTimestamp);
    expect((await gql(env.gw, GET, { n: 'ada' })).body.data[`${P}_person`]).toEqual(ada);

    const updated = await gql(
      env.gw,
      `mutation ($o: PeopleExampleComV1alpha1PersonInput!) { ${P}_updatePerson(name: "ada", object: $o) { ...P } } ${PERSON}`,
      { o: { metadata: { name: 'ada', version: 1 }, spec: { name: 'Ada Lovelace', age: 36, gender: 'FEMALE' } } },
    );
    expect(updated.body.errors).toBeUndefined();
    expect(updated.body.data[`${P}_updatePerson`].metadata.version).toBe(2);
    expect(updated.body.data[`${P}_updatePerson`].spec.name).toBe('Ada Lovelace');

    const stale = await gql(
      env.gw,
      `mutation ($o: PeopleExampleComV1alpha1PersonInput!) { ${P}_updatePerson(name: "ada", object: $o) { metadata { version } } }`,
      { o: { metadata: { name: 'ada', version: 1 }, spec: { name: 'Stale' } } },
    );
    expect(codes(stale)).toEqual(['CONFLICT']);
    expect(stale.status).toBe(200);

    const patched = await gql(env.gw, `mutation { ${P}_patchPerson(name: "ada", patch: { spec: { age: 37, gender: null } }) { ...P } } ${PERSON}`);
    expect(patched.body.data[`${P}_patchPerson`].spec).toMatchObject({ name: 'Ada Lovelace', age: 37, gender: null });

    const status = await gql(env.gw, `mutation { ${P}_updatePersonStatus(name: "ada", status: { phase: "Active" }) { ...P } } ${PERSON}`);
    expect(status.body.errors).toBeUndefined();
    expect(status.body.data[`${P}_updatePersonStatus`].status).toEqual({ phase: 'Active' });
    expect(status.body.data[`${P}_updatePersonStatus`].spec.age).toBe(37);

    const deleted = await gql(env.gw, `mutation { ${P}_deletePerson(name: "ada") { ...P } } ${PERSON}`);
    expect(deleted.body.data[`${P}_deletePerson`].metadata.deletionTimestamp).toEqual(expect.any(String));
    // no finalizers: removed at once, so get answers null (not an error)
    const gone = await gql(env.gw, GET, { n: 'ada' });
    expect(gone.body).toEqual({ data: { [`${P}_person`]: null } });
  });

  it('keeps a deleting object readable while it has finalizers', async () => {
    await gql(env.gw, CREATE, { o: { metadata: { name: 'fin', finalizers: ['example.com/hold'] }, spec: { name: 'F' } } });
    await gql(env.gw, `mutation { ${P}_deletePerson(name: "fin") { metadata { name } } }`);
    const got = await gql(env.gw, GET, { n: 'fin' });
    expect(got.body.data[`${P}_person`].metadata.deletionTimestamp).toEqual(expect.any(String));
  });

  it('generates names from generateName', async () => {
    const res = await gql(env.gw, CREATE, { o: { metadata: { generateName: 'gen-' }, spec: { name: 'G' } } });
    expect(res.body.data[`${P}_createPerson`].metadata.name).toMatch(/^gen-[a-z0-9]{5}$/);
  });

  it('lists with label and field selectors, sort and paging', async () => {
    for (const [name, team, spec] of [
      ['l-ann', 'a', 'Ann'],
      ['l-bob', 'b', 'Bob'],
      ['l-cat', 'a', 'Cat'],
      ['l-dan', 'a', 'Dan'],
    ] as const) {
      const r = await gql(env.gw, CREATE, { o: person(name, { name: spec }, { 'people.example.com/team': team, 'people.example.com/list': 'yes' }) });
      expect(r.body.errors).toBeUndefined();
    }
    const LIST = /* GraphQL */ `
      query ($page: Int, $size: Int, $sort: [String!], $l: [String!], $f: [String!]) {
        ${P}_persons(page: $page, size: $size, sort: $sort, labelSelector: $l, fieldSelector: $f) {
          page size total totalPages first last hasNext hasPrevious resourceVersion
          items { metadata { name } spec { name } }
        }
      }`;
    const page1 = await gql(env.gw, LIST, {
      page: 1,
      size: 2,
      sort: ['spec.name,desc'],
      l: ['people.example.com/list=yes', 'people.example.com/team in (a)'],
    });
    expect(page1.body.errors).toBeUndefined();
    const list = page1.body.data[`${P}_persons`];
    expect(list).toMatchObject({ page: 1, size: 2, total: 3, totalPages: 2, first: true, last: false, hasNext: true, hasPrevious: false });
    expect(list.items.map((i: any) => i.spec.name)).toEqual(['Dan', 'Cat']);
    expect(list.resourceVersion).toEqual(expect.any(String));

    const page2 = await gql(env.gw, LIST, { page: 2, size: 2, sort: ['spec.name,desc'], l: ['people.example.com/list=yes,people.example.com/team=a'] });
    expect(page2.body.data[`${P}_persons`].items.map((i: any) => i.spec.name)).toEqual(['Ann']);

    // a single string is a list of one; field selectors on indexed fields
    const byField = await gql(env.gw, LIST, { f: 'spec.name=Bob' });
    expect(byField.body.data[`${P}_persons`].items.map((i: any) => i.metadata.name)).toEqual(['l-bob']);
    const notBob = await gql(env.gw, LIST, { l: 'people.example.com/list', f: ['spec.name!=Bob', 'metadata.name!=l-dan'] });
    expect(notBob.body.data[`${P}_persons`].items.map((i: any) => i.metadata.name).sort()).toEqual(['l-ann', 'l-cat']);

    // same envelope as REST
    const rest = await call(env.gw, 'GET', '/apis/people.example.com/v1alpha1/persons?labelSelector=people.example.com/list&sort=spec.name,asc');
    const gqlAll = await gql(env.gw, LIST, { l: 'people.example.com/list', sort: 'spec.name,asc' });
    expect(gqlAll.body.data[`${P}_persons`].items.map((i: any) => i.metadata.name)).toEqual(rest.body.items.map((i: any) => i.metadata.name));
    expect(gqlAll.body.data[`${P}_persons`].total).toBe(rest.body.total);
  });

  it('answers bad selectors and sorts with BAD_REQUEST', async () => {
    const bad = await gql(env.gw, `{ ${P}_persons(fieldSelector: "spec.age=3") { total } }`);
    expect(codes(bad)).toEqual(['BAD_REQUEST']);
    const sort = await gql(env.gw, `{ ${P}_persons(sort: "spec.age,sideways") { total } }`);
    expect(codes(sort)).toEqual(['BAD_REQUEST']);
  });

  it('answers schema violations with INVALID and every failing field', async () => {
    const res = await gql(env.gw, CREATE, { o: { metadata: { name: 'Bad_Name' }, spec: { name: 'x'.repeat(101), age: 200 } } });
    expect(codes(res)).toEqual(['INVALID']);
    const fields = res.body.errors![0]!.extensions!.errors.map((e: { field: string }) => e.field);
    expect(fields).toEqual(expect.arrayContaining(['metadata.name', 'spec.name', 'spec.age']));
    expect(res.body.data).toBeNull();
  });

  it('answers a duplicate with CONFLICT and a missing object with NOT_FOUND', async () => {
    await gql(env.gw, CREATE, { o: person('dup') });
    expect(codes(await gql(env.gw, CREATE, { o: person('dup') }))).toEqual(['CONFLICT']);
    expect(codes(await gql(env.gw, `mutation { ${P}_patchPerson(name: "nobody", patch: {}) { metadata { name } } }`))).toEqual(['NOT_FOUND']);
    expect(codes(await gql(env.gw, `mutation { ${P}_deletePerson(name: "nobody") { metadata { name } } }`))).toEqual(['NOT_FOUND']);
  });

  it('keeps models of the same kind apart', async () => {
    const res = await gql(env.gw, `mutation { crmExampleNet_v1_createPerson(object: { metadata: { name: "ada" }, spec: { email: "ada@example.net", tags: ["vip"] } }) { apiVersion spec { email tags } } }`);
    expect(res.body.data.crmExampleNet_v1_createPerson).toEqual({ apiVersion: 'crm.example.net/v1', spec: { email: 'ada@example.net', tags: ['vip'] } });
    expect((await gql(env.gw, GET, { n: 'ada' })).body.data[`${P}_person`]).toBeNull();
  });

  it('checks @auth before the resolver runs', async () => {
    await gql(env.gw, CREATE, { o: person('guarded') });
    authz.calls.length = 0;
    authz.rule = (a) => a.verb !== 'get';
    // a logged-in caller (an anonymous one would get UNAUTHENTICATED)
    const res = await gql(env.gw, GET, { n: 'guarded' }, { authorization: adminAuth });
    expect(codes(res)).toEqual(['FORBIDDEN']);
    expect(res.body.errors![0]!.path).toEqual([`${P}_person`]);
    // only the directive asked: the resolver (and the operation's own check) never ran
    expect(authz.calls).toHaveLength(1);
    expect(authz.calls[0]).toMatchObject({
      verb: 'get',
      apiGroup: 'people.example.com',
      apiVersion: 'v1alpha1',
      resource: 'persons',
      subresource: '',
      name: 'guarded',
      isResourceRequest: true,
    });

    authz.calls.length = 0;
    authz.rule = (a) => !(a.verb === 'update' && a.subresource === 'status');
    const status = await gql(env.gw, `mutation { ${P}_updatePersonStatus(name: "guarded", status: { phase: "X" }) { metadata { name } } }`, undefined, { authorization: adminAuth });
    expect(codes(status)).toEqual(['FORBIDDEN']);
    expect(authz.calls).toEqual([expect.objectContaining({ verb: 'update', subresource: 'status', name: 'guarded' })]);
  });

  it('describes the caller with me', async () => {
    const anon = await gql(env.gw, '{ me { username roles uiPermissions } }');
    // anonymous, plus the templates aggregated into it (the content plugin's public posts)
    expect(anon.body.data.me).toMatchObject({ username: 'anonymous', uiPermissions: [] });
    expect(anon.body.data.me.roles[0]).toBe('anonymous');
    expect(anon.body.data.me.roles).not.toContain('authenticated');
    const admin = await gql(env.gw, '{ me { username roles } }', undefined, { authorization: adminAuth });
    expect(admin.body.data.me.username).toBe('admin');
    expect(admin.body.data.me.roles).toContain('super-role');
  });

  it('answers wrong credentials with 401 UNAUTHENTICATED', async () => {
    const bad = `Basic ${Buffer.from('admin:wrong').toString('base64')}`;
    const res = await gql(env.gw, '{ me { username } }', undefined, { authorization: bad });
    expect(res.status).toBe(401);
    expect(codes(res)).toEqual(['UNAUTHENTICATED']);
    expect(res.headers.get('www-authenticate')).toContain('Basic');
    expect(res.body.errors![0]!.extensions!.http).toBeUndefined();
  });

  it('masks unexpected errors without leaking details', async () => {
    authz.rule = () => {
      throw new Error('secret internals at /srv/db');
    };
    const res = await gql(env.gw, `{ ${P}_persons { total } }`);
    expect(codes(res)).toEqual(['INTERNAL']);
    expect(JSON.stringify(res.body)).not.toMatch(/secret|srv|stack|at /);
  });

  it('serves GET for queries and refuses mutations over GET', async () => {
    const q = encodeURIComponent('{ me { username } }');
    const res = await fetch(`${env.gw.url}/graphql?query=${q}`, { headers: { accept: 'application/json' } });
    expect(res.status).toBe(200);
    expect((await res.json()).data.me.username).toBe('anonymous');
    const m = encodeURIComponent(`mutation { ${P}_deletePerson(name: "x") { metadata { name } } }`);
    expect((await fetch(`${env.gw.url}/graphql?query=${m}`, { headers: { accept: 'application/json' } })).status).toBe(405);
  });

  describe('limits', () => {
    it('refuses documents deeper than 15 levels', async () => {
      let sel = 'metadata { name }';
      for (let i = 0; i < 8; i++) sel = `spec { otherPerson { ${sel} } }`;
      const res = await gql(env.gw, `{ ${P}_person(name: "x") { ${sel} } }`);
      expect(res.status).toBe(400);
      expect(codes(res)).toEqual(['BAD_REQUEST']);
      expect(res.body.errors![0]!.message).toMatch(/levels deep; the maximum is 15/);
    });

    it('counts depth through fragments', async () => {
      const res = await gql(
        env.gw,
        `query { ${P}_person(name: "x") { ...A } }
         fragment A on PeopleExampleComV1alpha1Person { spec { otherPerson { ...B } } }
         fragment B on PeopleExampleComV1alpha1Person { spec { otherPerson { ...C } } }
         fragment C on PeopleExampleComV1alpha1Person { spec { otherPerson { ...D } } }
         fragment D on PeopleExampleComV1alpha1Person { spec { otherPerson { spec { otherPerson { spec { otherPerson { spec { otherPerson { metadata { name } } } } } } } } } }`,
      );
      expect(codes(res)).toEqual(['BAD_REQUEST']);
    });

    it('refuses more than 30 aliases', async () => {
      const fields = Array.from({ length: 31 }, (_, i) => `a${i}: me { username }`).join(' ');
      const res = await gql(env.gw, `{ ${fields} }`);
      expect(res.status).toBe(400);
      expect(codes(res)).toEqual(['BAD_REQUEST']);
      expect(res.body.errors![0]!.message).toMatch(/more than 30 aliases/);
    });

    it('refuses more than 2000 tokens', async () => {
      const fields = Array.from({ length: 2100 }, () => '__typename').join(' ');
      const res = await gql(env.gw, `{ ${fields} }`);
      expect(res.status).toBe(400);
      expect(codes(res)).toEqual(['BAD_REQUEST']);
      expect(res.body.errors![0]!.message).toMatch(/more than 2000 tokens/);
    });

    it('lets the standard introspection query through', async () => {
      const { getIntrospectionQuery } = await import('graphql');
      const res = await gql(env.gw, getIntrospectionQuery());
      expect(res.body.errors).toBeUndefined();
      expect(res.body.data.__schema.directives.map((d: { name: string }) => d.name)).toContain('auth');
    });
  });
});
