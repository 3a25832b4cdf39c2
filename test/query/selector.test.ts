import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BadRequest } from '../../src/errors/index.js';
import { escapeSelectorValue } from '../../src/query/escape.js';
import { parseSelector } from '../../src/query/selector.js';
import type { Requirement } from '../../src/query/types.js';

const r = (key: string, op: Requirement['op'], values: string[] = []): Requirement => ({ key, op, values });

/** Asserts a 400 whose message names `term` verbatim (in double quotes). */
function expect400(input: string | string[], kind: 'label' | 'field', term: string): void {
  let err: unknown;
  try {
    parseSelector(input, kind);
  } catch (e) {
    err = e;
  }
  expect(err, `expected ${JSON.stringify(input)} to be rejected`).toBeInstanceOf(BadRequest);
  const e = err as BadRequest;
  expect(e.status).toBe(400);
  expect(e.code).toBe('BAD_REQUEST');
  expect(e.message).toContain(`"${term}"`);
  expect(e.message).toContain(kind === 'label' ? 'labelSelector' : 'fieldSelector');
}

describe('parseSelector: empty input', () => {
  it.each([
    ['undefined', undefined],
    ['empty string', ''],
    ['blank string', '   '],
    ['empty list', []],
    ['list of blanks', ['', ' ']],
  ])('%s → no requirements', (_n, input) => {
    expect(parseSelector(input as string[] | string | undefined, 'label')).toEqual([]);
    expect(parseSelector(input as string[] | string | undefined, 'field')).toEqual([]);
  });
});

describe('parseSelector: label terms', () => {
  const cases: Array<[string, Requirement[]]> = [
    // equality
    ['app=web', [r('app', 'in', ['web'])]],
    ['app==web', [r('app', 'in', ['web'])]],
    ['app!=web', [r('app', 'notin', ['web'])]],
    // sets
    ['app in (web,api)', [r('app', 'in', ['web', 'api'])]],
    ['app notin (web,api)', [r('app', 'notin', ['web', 'api'])]],
    ['app=(web,api)', [r('app', 'in', ['web', 'api'])]],
    ['app==(web,api)', [r('app', 'in', ['web', 'api'])]],
    ['app!=(web,api)', [r('app', 'notin', ['web', 'api'])]],
    ['app in (web)', [r('app', 'in', ['web'])]],
    ['app in(web)', [r('app', 'in', ['web'])]],
    ['app notin(web)', [r('app', 'notin', ['web'])]],
    ['app in (web,web,api)', [r('app', 'in', ['web', 'api'])]],
    // existence
    ['app', [r('app', 'exists')]],
    ['!app', [r('app', 'notexists')]],
    ['! app', [r('app', 'notexists')]],
    // empty values
    ['app=', [r('app', 'in', [''])]],
    ['app==', [r('app', 'in', [''])]],
    ['app!=', [r('app', 'notin', [''])]],
    ['app in (a,)', [r('app', 'in', ['a', ''])]],
    ['app in (,a)', [r('app', 'in', ['', 'a'])]],
    // whitespace
    [' app = web ', [r('app', 'in', ['web'])]],
    ['app  ==  web', [r('app', 'in', ['web'])]],
    ['app != web', [r('app', 'notin', ['web'])]],
    ['app   in   ( web ,  api )', [r('app', 'in', ['web', 'api'])]],
    ['\tapp\tnotin\t(\tweb\t)\t', [r('app', 'notin', ['web'])]],
    ['app = ( web , api )', [r('app', 'in', ['web', 'api'])]],
    ['  app  ', [r('app', 'exists')]],
    ['app = ', [r('app', 'in', [''])]],
    // several terms
    ['a=1,b!=2,c,!d', [r('a', 'in', ['1']), r('b', 'notin', ['2']), r('c', 'exists'), r('d', 'notexists')]],
    ['a in (1,2), b notin (3,4)', [r('a', 'in', ['1', '2']), r('b', 'notin', ['3', '4'])]],
    ['a=(1,2),b=3', [r('a', 'in', ['1', '2']), r('b', 'in', ['3'])]],
    [' a = 1 , b = 2 ', [r('a', 'in', ['1']), r('b', 'in', ['2'])]],
    // key shapes
    ['example.com/app=web', [r('example.com/app', 'in', ['web'])]],
    ['rbac.authorization.svc.run/aggregate-to-anonymous=true', [r('rbac.authorization.svc.run/aggregate-to-anonymous', 'in', ['true'])]],
    ['A_b.c-D=X_y.z-1', [r('A_b.c-D', 'in', ['X_y.z-1'])]],
    ['a-b.c/x', [r('a-b.c/x', 'exists')]],
    ['!a.b/c', [r('a.b/c', 'notexists')]],
    // keywords are only keywords after whitespace
    ['in', [r('in', 'exists')]],
    ['notin=in', [r('notin', 'in', ['in'])]],
    ['in in (in,notin)', [r('in', 'in', ['in', 'notin'])]],
    // limits
    [`${'a'.repeat(63)}=${'b'.repeat(63)}`, [r('a'.repeat(63), 'in', ['b'.repeat(63)])]],
    [`${'p'.repeat(253)}/n`, [r(`${'p'.repeat(253)}/n`, 'exists')]],
  ];
  it.each(cases)('%j', (input, expected) => {
    expect(parseSelector(input, 'label')).toEqual(expected);
  });
});

describe('parseSelector: field terms', () => {
  const cases: Array<[string, Requirement[]]> = [
    ['spec.slug=hello', [r('spec.slug', 'in', ['hello'])]],
    ['spec.slug==hello', [r('spec.slug', 'in', ['hello'])]],
    ['spec.slug!=hello', [r('spec.slug', 'notin', ['hello'])]],
    ['spec.slug=(a,b)', [r('spec.slug', 'in', ['a', 'b'])]],
    ['spec.slug in (a,b)', [r('spec.slug', 'in', ['a', 'b'])]],
    ['spec.slug notin (a,b)', [r('spec.slug', 'notin', ['a', 'b'])]],
    ['spec.slug', [r('spec.slug', 'exists')]],
    ['!spec.slug', [r('spec.slug', 'notexists')]],
    // `name` → metadata.name
    ['name=foo', [r('metadata.name', 'in', ['foo'])]],
    ['name in (a,b)', [r('metadata.name', 'in', ['a', 'b'])]],
    ['!name', [r('metadata.name', 'notexists')]],
    ['metadata.name=foo', [r('metadata.name', 'in', ['foo'])]],
    ['spec.name=foo', [r('spec.name', 'in', ['foo'])]],
    // field values are not restricted to the label charset
    ['spec.email=Ann@Example.COM', [r('spec.email', 'in', ['Ann@Example.COM'])]],
    ['metadata.creationTimestamp=2024-01-01T00:00:00Z', [r('metadata.creationTimestamp', 'in', ['2024-01-01T00:00:00Z'])]],
    ['spec.path=/a/b?c#d', [r('spec.path', 'in', ['/a/b?c#d'])]],
    ['spec.x = a , spec.y != b', [r('spec.x', 'in', ['a']), r('spec.y', 'notin', ['b'])]],
    ['spec.age=42', [r('spec.age', 'in', ['42'])]],
  ];
  it.each(cases)('%j', (input, expected) => {
    expect(parseSelector(input, 'field')).toEqual(expected);
  });
});

describe('parseSelector: a field value takes what people type (up to the next unescaped comma)', () => {
  const cases: Array<[string, Requirement[]]> = [
    ['spec.author=Ada Lovelace', [r('spec.author', 'in', ['Ada Lovelace'])]],
    ['spec.author==Ada  Lovelace', [r('spec.author', 'in', ['Ada  Lovelace'])]],
    ['spec.author!=Ada Lovelace', [r('spec.author', 'notin', ['Ada Lovelace'])]],
    ['spec.title=a\tb', [r('spec.title', 'in', ['a\tb'])]],
    ['spec.title=1 < 2 > 0 ~ x', [r('spec.title', 'in', ['1 < 2 > 0 ~ x'])]],
    ['spec.title=a\\, b c,spec.x=d e', [r('spec.title', 'in', ['a, b c']), r('spec.x', 'in', ['d e'])]],
    ['spec.author=Ada Lovelace, name=ada', [r('spec.author', 'in', ['Ada Lovelace']), r('metadata.name', 'in', ['ada'])]],
    // unescaped whitespace at the two ends is trimmed, as around every token; `\ ` keeps it
    ['spec.author = Ada Lovelace ', [r('spec.author', 'in', ['Ada Lovelace'])]],
    ['spec.author=\\ Ada Lovelace\\ ', [r('spec.author', 'in', [' Ada Lovelace '])]],
    // escapes inside a value with spaces
    ['spec.title=Me\\, Myself \\(and I\\) \\= \\!\\\\', [r('spec.title', 'in', ['Me, Myself (and I) = !\\'])]],
    // the set forms keep their syntax (members end at whitespace)
    ['spec.x in (Ada\\ Lovelace, Grace)', [r('spec.x', 'in', ['Ada Lovelace', 'Grace'])]],
    ['spec.x=( a , b )', [r('spec.x', 'in', ['a', 'b'])]],
  ];
  it.each(cases)('%j', (input, expected) => {
    expect(parseSelector(input, 'field')).toEqual(expected);
  });
});

describe('escapeSelectorValue', () => {
  const values = ['Ada Lovelace', 'a,b', '(x)', 'a=b!=c', 'back\\slash', ' edges ', '\t', '<~>', 'Ünïcödé ✓', 'x'.repeat(200), ',,,', ')(', '=', '!'];
  it.each(values)('%j reads back exactly as a field value, a set member and among other terms', (v) => {
    const e = escapeSelectorValue(v);
    expect(parseSelector(`spec.x=${e}`, 'field')).toEqual([r('spec.x', 'in', [v])]);
    expect(parseSelector(`spec.x!=${e}`, 'field')).toEqual([r('spec.x', 'notin', [v])]);
    expect(parseSelector(`spec.x in (${e},other)`, 'field')).toEqual([r('spec.x', 'in', [...new Set([v, 'other'])])]);
    expect(parseSelector(`spec.x=${e},spec.y=${e}`, 'field')).toEqual([r('spec.x', 'in', [v]), r('spec.y', 'in', [v])]);
  });
  it('leaves plain values alone and escapes only what the parser reserves', () => {
    expect(escapeSelectorValue('hello-world_1.2@x/y:z')).toBe('hello-world_1.2@x/y:z');
    expect(escapeSelectorValue('Ada Lovelace, Countess')).toBe('Ada\\ Lovelace\\,\\ Countess');
  });
  it('is the package export svc-gateway/selectors (types from the source, code from its build in dist/)', () => {
    const pkg = JSON.parse(readFileSync(join(import.meta.dirname, '../../package.json'), 'utf8'));
    const entry = pkg.exports['./selectors'];
    expect(entry).toEqual({ types: './src/query/escape.ts', default: './dist/query/escape.js' });
    expect(existsSync(join(import.meta.dirname, '../..', entry.types))).toBe(true);
  });
  it('reads back any string (property)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }), (v) => {
        expect(parseSelector(`spec.x=${escapeSelectorValue(v)}`, 'field')).toEqual([r('spec.x', 'in', [v])]);
      }),
      { numRuns: 500 },
    );
  });
});

describe('parseSelector: escapes', () => {
  const cases: Array<[string, string[]]> = [
    ['spec.x=a\\,b', ['a,b']],
    ['spec.x=a\\\\b', ['a\\b']],
    ['spec.x=\\(a\\)', ['(a)']],
    ['spec.x=a\\=b', ['a=b']],
    ['spec.x=\\!a', ['!a']],
    ['spec.x=a\\ b', ['a b']],
    ['spec.x=\\<\\>\\~', ['<>~']],
    ['spec.x=\\=\\=', ['==']],
    ['spec.x in (a\\,b, c\\)d)', ['a,b', 'c)d']],
    ['spec.x=(\\(,\\))', ['(', ')']],
    ['spec.x=a\\ ', ['a ']],
    ['spec.x=a\\\\ ', ['a\\']],
    ['spec.x=a\\  ', ['a ']],
    ['  spec.x  =  \\ a  ', [' a']],
  ];
  it.each(cases)('%j', (input, values) => {
    expect(parseSelector(input, 'field')).toEqual([r('spec.x', 'in', values)]);
  });

  it('an escaped comma does not split terms', () => {
    expect(parseSelector('spec.x=a\\,b,spec.y=c', 'field')).toEqual([
      r('spec.x', 'in', ['a,b']),
      r('spec.y', 'in', ['c']),
    ]);
  });

  it('escaped parentheses do not count towards balance', () => {
    expect(parseSelector('spec.x=\\(,spec.y=\\)', 'field')).toEqual([
      r('spec.x', 'in', ['(']),
      r('spec.y', 'in', [')']),
    ]);
  });

  it('label values may use escapes of characters that are valid anyway', () => {
    expect(parseSelector('app=we\\ b', 'field')).toEqual([r('app', 'in', ['we b'])]);
    expect(parseSelector('app=(a,b)', 'label')).toEqual([r('app', 'in', ['a', 'b'])]);
  });
});

describe('parseSelector: repeated parameters', () => {
  it('ANDs the terms of every value in order', () => {
    expect(parseSelector(['a=1', 'b in (2,3)', '!c', ''], 'label')).toEqual([
      r('a', 'in', ['1']),
      r('b', 'in', ['2', '3']),
      r('c', 'notexists'),
    ]);
  });
  it('keeps repeated keys as separate requirements', () => {
    expect(parseSelector(['a=1', 'a!=2'], 'label')).toEqual([r('a', 'in', ['1']), r('a', 'notin', ['2'])]);
  });
  it('accepts a single string', () => {
    expect(parseSelector('a=1,b=2', 'label')).toHaveLength(2);
  });
  it('names the term of the failing value', () => {
    expect400(['a=1', 'b=2', 'c>3'], 'label', 'c>3');
  });
});

describe('parseSelector: malformed input is a 400 naming the term', () => {
  // [input, term the message must quote]
  const both: Array<[string, string]> = [
    // unknown operators
    ['k>v', 'k>v'],
    ['k<v', 'k<v'],
    ['k>=v', 'k>=v'],
    ['k<=v', 'k<=v'],
    ['k=~v', 'k=~v'],
    ['k!~v', 'k!~v'],
    ['k~=v', 'k~=v'],
    ['k===v', 'k===v'],
    ['k!==v', 'k!==v'],
    ['k=!v', 'k=!v'],
    ['k!v', 'k!v'],
    ['k:v', 'k:v'],
    ['k exists', 'k exists'],
    ['k IN (a)', 'k IN (a)'],
    ['k is (a)', 'k is (a)'],
    ['k 5', 'k 5'],
    ['k (a)', 'k (a)'],
    ['k(a)', 'k(a)'],
    // the example of the brief
    ['a=b=c', 'a=b=c'],
    ['a==b==c', 'a==b==c'],
    ['a=b!c', 'a=b!c'],
    // sets
    ['k in ()', 'k in ()'],
    ['k in ( )', 'k in ( )'],
    ['k notin ()', 'k notin ()'],
    ['k=()', 'k=()'],
    ['k in a', 'k in a'],
    ['k in', 'k in'],
    ['k notin', 'k notin'],
    ['k in (a b)', 'k in (a b)'],
    ['k in ((a))', 'k in ((a))'],
    ['k in (a(b))', 'k in (a(b))'],
    ['k in (a) b', 'k in (a) b'],
    // unbalanced parentheses
    ['k in (a,b', 'k in (a,b'],
    ['k in (a', 'k in (a'],
    ['k=(a', 'k=(a'],
    ['k in a)', 'k in a)'],
    ['k=a)', 'k=a)'],
    ['k in (a))', 'k in (a))'],
    ['x=1,k in (a,b, c=d', 'k in (a,b, c=d'],
    [')', ')'],
    ['(', '('],
    // empty keys
    ['=v', '=v'],
    ['==v', '==v'],
    ['!=v', '!=v'],
    ['!', '!'],
    ['! ', '!'],
    [' in (a)', 'in (a)'], // key "in", then "(": terms are quoted trimmed
    ['!!k', '!!k'],
    // trailing garbage
    ['!k=v', '!k=v'],
    ['!k v', '!k v'],
    ['!k in (a)', '!k in (a)'],
    ['k=v(', 'k=v('],
    ['k=v)', 'k=v)'],
    // bad escapes
    ['k=a\\b', 'k=a\\b'],
    ['k=a\\', 'k=a\\'],
    ['k=\\n', 'k=\\n'],
    ['k\\,x=v', 'k\\,x=v'],
    ['\\k=v', '\\k=v'],
    // non-key characters
    ['k@x=v', 'k@x=v'],
    ['#k', '#k'],
  ];
  it.each(both)('label %j', (input, term) => {
    expect400(input, 'label', term);
  });
  it.each(both)('field %j', (input, term) => {
    expect400(input, 'field', term);
  });

  it.each([
    ['a=1,,b=2', 'a=1,,b=2'],
    ['a=1,', 'a=1,'],
    [',a=1', ',a=1'],
    [' , ', ' , '],
    ['k in (a),', 'k in (a),'],
  ])('empty term in %j names the whole value', (input, value) => {
    expect400(input, 'label', value);
    expect400(input, 'field', value);
  });

  const labelOnly: Array<[string, string]> = [
    ['Example.com/app=x', 'Example.com/app=x'],
    ['exa_mple.com/app=x', 'exa_mple.com/app=x'],
    ['-a.com/app', '-a.com/app'],
    ['a-.com/app', 'a-.com/app'],
    ['a..com/app', 'a..com/app'],
    ['/app=x', '/app=x'],
    ['a.com/=x', 'a.com/=x'],
    ['a.com/', 'a.com/'],
    ['a/b/c=x', 'a/b/c=x'],
    ['-app=x', '-app=x'],
    ['app-=x', 'app-=x'],
    ['_app', '_app'],
    ['.app', '.app'],
    [`${'a'.repeat(64)}=x`, `${'a'.repeat(64)}=x`],
    [`${'p'.repeat(254)}/n`, `${'p'.repeat(254)}/n`],
    [`app=${'v'.repeat(64)}`, `app=${'v'.repeat(64)}`],
    ['app=-x', 'app=-x'],
    ['app=x-', 'app=x-'],
    ['app=x_', 'app=x_'],
    ['app=a@b', 'app=a@b'],
    ['app=a/b', 'app=a/b'],
    ['app=a\\ b', 'app=a\\ b'],
    ['app=a\\,b', 'app=a\\,b'],
    ['app in (ok,-bad)', 'app in (ok,-bad)'],
    ['app notin (ok, bad!)', 'app notin (ok, bad!)'],
    // label values cannot hold spaces: a space ends the value
    ['k=v w', 'k=v w'],
    ['k = v w', 'k = v w'],
    ['k=a<b', 'k=a<b'],
  ];
  it.each(labelOnly)('label rules: %j', (input, term) => {
    expect400(input, 'label', term);
  });

  const fieldOnly: Array<[string, string]> = [
    ['spec.x=', 'spec.x='],
    ['spec.x!=', 'spec.x!='],
    ['spec.x==', 'spec.x=='],
    ['spec.x in (a,)', 'spec.x in (a,)'],
    ['spec.x=(,)', 'spec.x=(,)'],
    ['spec..x=a', 'spec..x=a'],
    ['.spec=a', '.spec=a'],
    ['spec.=a', 'spec.=a'],
    ['.', '.'],
  ];
  it.each(fieldOnly)('field rules: %j', (input, term) => {
    expect400(input, 'field', term);
  });

  // What still needs a `\` in a field value: , ( ) = ! and \ itself; sets keep their syntax.
  it.each([
    ['spec.x=Ada=Lovelace', 'unexpected "=" in value (escape it as "\\=")'],
    ['spec.x=Ada!', 'unexpected "!" in value'],
    ['spec.x=Ada (Countess)', 'unexpected "(" in value'],
    ['spec.x=Ada)', 'unexpected ")" after value'],
    ['spec.x=Ada\\q', 'invalid escape "\\q"'],
    ['spec.x in (Ada Lovelace)', 'unexpected "L" in set'],
    ['spec.x=~Ada', 'unknown operator "=~"'],
  ])('field value %j is a 400: %s', (input, reason) => {
    expect(() => parseSelector(input, 'field')).toThrow(reason);
  });

  it('gives a reason after the term', () => {
    expect(() => parseSelector('a=b=c', 'label')).toThrow(/^invalid labelSelector term "a=b=c": .+/);
    expect(() => parseSelector('k>v', 'field')).toThrow('invalid fieldSelector term "k>v": unknown operator ">"');
    expect(() => parseSelector('k=~v', 'label')).toThrow('unknown operator "=~"');
    expect(() => parseSelector('k in ()', 'label')).toThrow('empty set');
    expect(() => parseSelector('k in (a', 'label')).toThrow('unbalanced parentheses');
    expect(() => parseSelector('k=a\\q', 'field')).toThrow('invalid escape "\\q"');
    expect(() => parseSelector('=v', 'label')).toThrow('empty key');
  });
});
