import { describe, expect, it } from 'vitest';
import { BadRequest } from '../../src/errors/index.js';
import {
  DEFAULT_SORT,
  MAX_PAGE_SIZE,
  labelIndexValues,
  matchesIndexRequirement,
  matchesSelectors,
  matchesWhere,
  parseListParams,
  parsePositiveInt,
  parseSelectors,
  planListQuery,
  type ListQueryInput,
} from '../../src/query/plan.js';
import { parseSelector } from '../../src/query/selector.js';
import type { Requirement, SortSpec } from '../../src/query/types.js';
import type { IndexRequirement, StoreQuery } from '../../src/store/types.js';

const INDEXES: ReadonlySet<string> = new Set([
  'metadata.name',
  'metadata.labels',
  'metadata.creationTimestamp',
  'metadata.deletionTimestamp',
  'spec.slug',
  'spec.tags',
  'spec.age',
]);

const r = (key: string, op: Requirement['op'], values: string[] = []): Requirement => ({ key, op, values });
const plan = (input: Partial<ListQueryInput>): StoreQuery =>
  planListQuery({ labels: [], fields: [], sort: [], ...input }, INDEXES);

function catch400(fn: () => unknown): BadRequest {
  let err: unknown;
  try {
    fn();
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(BadRequest);
  expect((err as BadRequest).status).toBe(400);
  return err as BadRequest;
}

describe('planListQuery: labels → metadata.labels', () => {
  const L = 'metadata.labels';
  const cases: Array<[string, IndexRequirement[]]> = [
    ['app=web', [{ index: L, op: 'in', values: ['app=web'] }]],
    ['app==web', [{ index: L, op: 'in', values: ['app=web'] }]],
    ['app in (web,api)', [{ index: L, op: 'in', values: ['app=web', 'app=api'] }]],
    ['app=(web,api)', [{ index: L, op: 'in', values: ['app=web', 'app=api'] }]],
    ['app!=web', [{ index: L, op: 'notin', values: ['app=web'] }]],
    ['app notin (web,api)', [{ index: L, op: 'notin', values: ['app=web', 'app=api'] }]],
    ['app', [{ index: L, op: 'in', values: ['app'] }]],
    ['!app', [{ index: L, op: 'notin', values: ['app'] }]],
    ['app=', [{ index: L, op: 'in', values: ['app='] }]],
    ['a.io/app=web', [{ index: L, op: 'in', values: ['a.io/app=web'] }]],
    [
      'a=1,!b',
      [
        { index: L, op: 'in', values: ['a=1'] },
        { index: L, op: 'notin', values: ['b'] },
      ],
    ],
  ];
  it.each(cases)('%j', (sel, where) => {
    expect(plan({ labels: parseSelector(sel, 'label') }).where).toEqual(where);
  });
});

describe('planListQuery: fields map 1:1 onto indexes', () => {
  const cases: Array<[string, IndexRequirement[]]> = [
    ['spec.slug=a', [{ index: 'spec.slug', op: 'in', values: ['a'] }]],
    ['spec.slug!=a', [{ index: 'spec.slug', op: 'notin', values: ['a'] }]],
    ['spec.slug in (a,b)', [{ index: 'spec.slug', op: 'in', values: ['a', 'b'] }]],
    ['spec.slug notin (a,b)', [{ index: 'spec.slug', op: 'notin', values: ['a', 'b'] }]],
    ['spec.slug', [{ index: 'spec.slug', op: 'exists', values: [] }]],
    ['!spec.slug', [{ index: 'spec.slug', op: 'notexists', values: [] }]],
    ['name=x', [{ index: 'metadata.name', op: 'in', values: ['x'] }]],
    ['!metadata.deletionTimestamp', [{ index: 'metadata.deletionTimestamp', op: 'notexists', values: [] }]],
  ];
  it.each(cases)('%j', (sel, where) => {
    expect(plan({ fields: parseSelector(sel, 'field') }).where).toEqual(where);
  });

  it('puts label conditions before field conditions', () => {
    const q = plan({ labels: [r('a', 'exists')], fields: [r('spec.slug', 'in', ['x'])] });
    expect(q.where.map((w) => w.index)).toEqual(['metadata.labels', 'spec.slug']);
  });

  it.each(['spec.x', 'spec', 'status.phase', 'metadata.labelsx', 'spec.slug.x'])(
    'rejects the non-indexed field %s, listing the indexed ones',
    (key) => {
      const e = catch400(() => plan({ fields: [r(key, 'in', ['a'])] }));
      expect(e.message).toBe(
        `field "${key}" is not indexed; indexed fields: metadata.creationTimestamp, metadata.deletionTimestamp, ` +
          'metadata.labels, metadata.name, spec.age, spec.slug, spec.tags',
      );
    },
  );
});

describe('planListQuery: sort', () => {
  const cases: Array<[SortSpec[], StoreQuery['sort']]> = [
    [[], [...DEFAULT_SORT]],
    [
      [{ field: 'spec.age', direction: 'asc' }],
      [
        { index: 'spec.age', direction: 'asc' },
        { index: 'metadata.name', direction: 'asc' },
      ],
    ],
    [
      [{ field: 'spec.age', direction: 'desc' }],
      [
        { index: 'spec.age', direction: 'desc' },
        { index: 'metadata.name', direction: 'desc' },
      ],
    ],
    [
      [
        { field: 'spec.age', direction: 'desc' },
        { field: 'spec.slug', direction: 'asc' },
      ],
      [
        { index: 'spec.age', direction: 'desc' },
        { index: 'spec.slug', direction: 'asc' },
        { index: 'metadata.name', direction: 'asc' },
      ],
    ],
    [[{ field: 'metadata.name', direction: 'desc' }], [{ index: 'metadata.name', direction: 'desc' }]],
    [[{ field: 'name', direction: 'desc' }], [{ index: 'metadata.name', direction: 'desc' }]],
    [
      [
        { field: 'metadata.name', direction: 'asc' },
        { field: 'spec.age', direction: 'desc' },
      ],
      [
        { index: 'metadata.name', direction: 'asc' },
        { index: 'spec.age', direction: 'desc' },
      ],
    ],
    [
      [{ field: 'metadata.creationTimestamp', direction: 'asc' }],
      [
        { index: 'metadata.creationTimestamp', direction: 'asc' },
        { index: 'metadata.name', direction: 'asc' },
      ],
    ],
  ];
  it.each(cases)('%j', (sort, expected) => {
    expect(plan({ sort }).sort).toEqual(expected);
  });

  it('default sort is creationTimestamp desc, name asc', () => {
    expect(plan({}).sort).toEqual([
      { index: 'metadata.creationTimestamp', direction: 'desc' },
      { index: 'metadata.name', direction: 'asc' },
    ]);
  });

  it('does not share the default sort array between plans', () => {
    const a = plan({});
    a.sort[0]!.direction = 'asc';
    expect(plan({}).sort[0]!.direction).toBe('desc');
  });

  it.each(['spec.x', 'status.phase', 'spec'])('rejects sorting by the non-indexed %s', (field) => {
    const e = catch400(() => plan({ sort: [{ field, direction: 'asc' }] }));
    expect(e.message).toContain(`"${field}"`);
    expect(e.message).toContain('metadata.creationTimestamp, metadata.deletionTimestamp, metadata.labels');
  });

  it.each([
    [['spec.age', 'spec.age']],
    [['spec.age', 'spec.slug', 'spec.age']],
    [['name', 'metadata.name']],
    [['metadata.name', 'name']],
  ])('rejects duplicate sort fields %j', (fields) => {
    const e = catch400(() => plan({ sort: fields.map((field) => ({ field, direction: 'asc' as const })) }));
    expect(e.message).toMatch(/sort field ".+" is given more than once/);
  });
});

describe('planListQuery: page and size', () => {
  const cases: Array<[number | undefined, number | undefined, number, number | undefined]> = [
    // page, size → offset, limit
    [undefined, undefined, 0, undefined],
    [1, undefined, 0, undefined],
    [3, undefined, 0, undefined],
    [undefined, 10, 0, 10],
    [1, 10, 0, 10],
    [2, 10, 10, 10],
    [5, 3, 12, 3],
    [1, 1, 0, 1],
    [1, MAX_PAGE_SIZE, 0, MAX_PAGE_SIZE],
    [1_000_000, 100, 99_999_900, 100],
  ];
  it.each(cases)('page %j size %j → offset %j limit %j', (page, size, offset, limit) => {
    const q = plan({ page, size });
    expect(q.offset).toBe(offset);
    expect(q.limit).toBe(limit);
    expect('limit' in q).toBe(limit !== undefined);
  });

  const bad: Array<[string, Partial<ListQueryInput>]> = [
    ['page 0', { page: 0 }],
    ['page -1', { page: -1 }],
    ['page 1.5', { page: 1.5 }],
    ['page NaN', { page: Number.NaN }],
    ['page Infinity', { page: Number.POSITIVE_INFINITY }],
    ['page unsafe', { page: 2 ** 60 }],
    ['size 0', { size: 0 }],
    ['size -5', { size: -5 }],
    ['size 2.5', { size: 2.5 }],
    ['size NaN', { size: Number.NaN }],
    ['size too large', { size: MAX_PAGE_SIZE + 1 }],
    ['offset overflow', { page: Number.MAX_SAFE_INTEGER, size: 10 }],
    ['page as string at runtime', { page: '2' as unknown as number }],
  ];
  it.each(bad)('%s → 400', (_n, input) => {
    const e = catch400(() => plan(input));
    expect(e.message).toMatch(/page|size/);
  });
  it('names the bad number', () => {
    expect(catch400(() => plan({ size: 0 })).message).toBe('size must be an integer of at least 1, got 0');
    expect(catch400(() => plan({ page: 1.5 })).message).toBe('page must be an integer of at least 1, got 1.5');
    expect(catch400(() => plan({ size: MAX_PAGE_SIZE + 1 })).message).toContain(`at most ${MAX_PAGE_SIZE}`);
  });
});

describe('parsePositiveInt', () => {
  it.each([
    [undefined, undefined],
    [null, undefined],
    ['', undefined],
    ['  ', undefined],
    ['1', 1],
    ['42', 42],
    [' 7 ', 7],
    ['007', 7],
  ])('%j → %j', (raw, n) => {
    expect(parsePositiveInt('size', raw)).toBe(n);
  });
  it.each(['0', '-1', '+1', '1.0', '1e3', '0x10', 'abc', '1 2', '١', '9007199254740993'])('%j → 400', (raw) => {
    const e = catch400(() => parsePositiveInt('page', raw));
    expect(e.message).toContain('page');
  });
});

describe('parseListParams', () => {
  it('combines selectors, sort and window', () => {
    expect(
      parseListParams(
        {
          labelSelector: ['app=web,tier in (fe,be)', '!legacy'],
          fieldSelector: ['name!=x', 'spec.tags'],
          sort: ['spec.age,desc', 'spec.slug'],
          page: 3,
          size: 20,
        },
        INDEXES,
      ),
    ).toEqual({
      where: [
        { index: 'metadata.labels', op: 'in', values: ['app=web'] },
        { index: 'metadata.labels', op: 'in', values: ['tier=fe', 'tier=be'] },
        { index: 'metadata.labels', op: 'notin', values: ['legacy'] },
        { index: 'metadata.name', op: 'notin', values: ['x'] },
        { index: 'spec.tags', op: 'exists', values: [] },
      ],
      sort: [
        { index: 'spec.age', direction: 'desc' },
        { index: 'spec.slug', direction: 'asc' },
        { index: 'metadata.name', direction: 'asc' },
      ],
      offset: 40,
      limit: 20,
    });
  });

  it('defaults to every object, newest first', () => {
    expect(parseListParams({}, INDEXES)).toEqual({ where: [], sort: [...DEFAULT_SORT], offset: 0 });
  });

  it.each([
    [{ labelSelector: ['a=b=c'] }, '"a=b=c"'],
    [{ fieldSelector: ['spec.x=1'] }, '"spec.x"'],
    [{ sort: ['spec.age,up'] }, '"spec.age,up"'],
    [{ sort: ['spec.nope'] }, '"spec.nope"'],
    [{ sort: ['name', 'name,desc'] }, '"metadata.name"'],
    [{ size: 0 }, 'size'],
  ])('%j → 400 naming %s', (params, needle) => {
    expect(catch400(() => parseListParams(params, INDEXES)).message).toContain(needle);
  });
});

describe('parseSelectors (watch)', () => {
  it('parses both selectors', () => {
    expect(parseSelectors('a=1', ['name=x'], INDEXES)).toEqual({
      labels: [r('a', 'in', ['1'])],
      fields: [r('metadata.name', 'in', ['x'])],
    });
  });
  it('rejects non-indexed fields', () => {
    expect(catch400(() => parseSelectors(undefined, 'spec.x=1', INDEXES)).message).toContain('"spec.x" is not indexed');
  });
});

describe('matchesIndexRequirement', () => {
  const cases: Array<[string[], IndexRequirement['op'], string[], boolean]> = [
    // values, op, set, expected
    [['a'], 'in', ['a'], true],
    [['a'], 'in', ['b'], false],
    [['a'], 'in', ['a', 'b'], true],
    [[], 'in', ['a'], false],
    [['a', 'b'], 'in', ['b'], true],
    [['a', 'b'], 'in', ['c'], false],
    [['a'], 'notin', ['a'], false],
    [['a'], 'notin', ['b'], true],
    [[], 'notin', ['a'], true],
    [['a', 'b'], 'notin', ['b'], false],
    [['a', 'b'], 'notin', ['c', 'd'], true],
    [['a'], 'exists', [], true],
    [['a', 'b'], 'exists', [], true],
    [[], 'exists', [], false],
    [['a'], 'notexists', [], false],
    [[], 'notexists', [], true],
    [[''], 'in', [''], true],
    [[''], 'exists', [], true],
  ];
  it.each(cases)('%j %s %j → %s', (values, op, set, expected) => {
    expect(matchesIndexRequirement(values, { index: 'i', op, values: set })).toBe(expected);
  });
});

describe('matchesSelectors', () => {
  const obj = (labels?: Record<string, string>, fields: Record<string, string[]> = {}) => ({
    metadata: labels === undefined ? {} : { labels },
    fields,
  });
  type O = ReturnType<typeof obj>;
  const match = (o: O, labelSel: string, fieldSel = ''): boolean =>
    matchesSelectors(o, parseSelector(labelSel, 'label'), parseSelector(fieldSel, 'field'), (f) => o.fields[f] ?? []);

  const web = obj({ app: 'web', tier: 'fe', empty: '' });
  const api = obj({ app: 'api' });
  const bare = obj({});
  const none = obj(undefined);

  const labelCases: Array<[string, O, string, boolean]> = [
    ['web', web, 'app=web', true],
    ['api', api, 'app=web', false],
    ['bare', bare, 'app=web', false],
    ['none', none, 'app=web', false],
    ['web', web, 'app==web', true],
    ['web', web, 'app!=web', false],
    ['api', api, 'app!=web', true],
    ['bare', bare, 'app!=web', true],
    ['none', none, 'app!=web', true],
    ['web', web, 'app in (web,api)', true],
    ['api', api, 'app in (web,api)', true],
    ['api', api, 'app in (web,x)', false],
    ['bare', bare, 'app in (web,api)', false],
    ['web', web, 'app=(web,api)', true],
    ['web', web, 'app notin (web,api)', false],
    ['api', api, 'app notin (web,x)', true],
    ['bare', bare, 'app notin (web,api)', true],
    ['web', web, 'app', true],
    ['bare', bare, 'app', false],
    ['none', none, 'app', false],
    ['web', web, '!app', false],
    ['bare', bare, '!app', true],
    ['none', none, '!app', true],
    ['web', web, 'empty', true],
    ['web', web, 'empty=', true],
    ['web', web, 'empty!=', false],
    ['api', api, 'empty!=', true],
    ['web', web, 'app=', false],
    ['web', web, 'app=web,tier=fe', true],
    ['web', web, 'app=web,tier=be', false],
    ['web', web, 'app=web,!legacy', true],
    ['web', web, 'app,tier,!x', true],
    ['any', none, '', true],
  ];
  it.each(labelCases)('%s matches %j: %s', (_n, o, sel, expected) => {
    expect(match(o, sel)).toBe(expected);
  });

  const single = obj({}, { 'spec.slug': ['hello'], 'metadata.name': ['n1'] });
  const multi = obj({}, { 'spec.tags': ['a', 'b', 'c'] });
  const missing = obj({}, {});
  const fieldCases: Array<[string, O, string, boolean]> = [
    ['single', single, 'spec.slug=hello', true],
    ['single', single, 'spec.slug=bye', false],
    ['missing', missing, 'spec.slug=hello', false],
    ['single', single, 'spec.slug!=hello', false],
    ['single', single, 'spec.slug!=bye', true],
    ['missing', missing, 'spec.slug!=hello', true],
    ['single', single, 'spec.slug in (bye,hello)', true],
    ['single', single, 'spec.slug notin (bye,hello)', false],
    ['missing', missing, 'spec.slug notin (bye,hello)', true],
    ['single', single, 'spec.slug', true],
    ['missing', missing, 'spec.slug', false],
    ['single', single, '!spec.slug', false],
    ['missing', missing, '!spec.slug', true],
    ['single', single, 'name=n1', true],
    ['single', single, 'name!=n1', false],
    ['multi', multi, 'spec.tags=b', true],
    ['multi', multi, 'spec.tags=z', false],
    ['multi', multi, 'spec.tags in (z,c)', true],
    ['multi', multi, 'spec.tags in (y,z)', false],
    ['multi', multi, 'spec.tags!=b', false],
    ['multi', multi, 'spec.tags!=z', true],
    ['multi', multi, 'spec.tags notin (z,a)', false],
    ['multi', multi, 'spec.tags notin (y,z)', true],
    ['multi', multi, 'spec.tags', true],
    ['multi', multi, '!spec.tags', false],
    ['multi', multi, 'spec.tags=a,spec.tags=c', true],
    ['multi', multi, 'spec.tags=a,spec.tags!=c', false],
  ];
  it.each(fieldCases)('%s matches %j: %s', (_n, o, sel, expected) => {
    expect(match(o, '', sel)).toBe(expected);
  });

  it('ANDs labels and fields', () => {
    const o = obj({ app: 'web' }, { 'spec.slug': ['s'] });
    expect(match(o, 'app=web', 'spec.slug=s')).toBe(true);
    expect(match(o, 'app=web', 'spec.slug=t')).toBe(false);
    expect(match(o, 'app=api', 'spec.slug=s')).toBe(false);
  });

  it('agrees with the planned query on the label index for every selector', () => {
    const objects = [web, api, bare, none, obj({ app: 'web' }), obj({ tier: 'be', app: '' })];
    const selectors = labelCases.map(([, , sel]) => sel);
    for (const sel of selectors) {
      const labels = parseSelector(sel, 'label');
      const { where } = planListQuery({ labels, fields: [], sort: [] }, INDEXES);
      for (const o of objects) {
        const viaPlan = matchesWhere(where, (index) =>
          index === 'metadata.labels' ? labelIndexValues(o.metadata.labels) : [],
        );
        expect(matchesSelectors(o, labels, [], () => []), `${sel} on ${JSON.stringify(o.metadata)}`).toBe(viaPlan);
      }
    }
  });

  it('labelIndexValues holds the bare key and key=value per label', () => {
    expect(labelIndexValues({ a: '1', 'x.io/b': '' })).toEqual(['a', 'a=1', 'x.io/b', 'x.io/b=']);
    expect(labelIndexValues(undefined)).toEqual([]);
  });
});
