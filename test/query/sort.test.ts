import { describe, expect, it } from 'vitest';
import { BadRequest } from '../../src/errors/index.js';
import { parseSort } from '../../src/query/sort.js';
import type { SortSpec } from '../../src/query/types.js';

const s = (field: string, direction: SortSpec['direction'] = 'asc'): SortSpec => ({ field, direction });

describe('parseSort: valid', () => {
  const cases: Array<[string | string[] | undefined, SortSpec[]]> = [
    [undefined, []],
    ['', []],
    ['  ', []],
    [[], []],
    [['', ' '], []],
    ['spec.age', [s('spec.age')]],
    ['spec.age,asc', [s('spec.age')]],
    ['spec.age,desc', [s('spec.age', 'desc')]],
    ['spec.age,ASC', [s('spec.age')]],
    ['spec.age,DESC', [s('spec.age', 'desc')]],
    ['spec.age,Desc', [s('spec.age', 'desc')]],
    [' spec.age , desc ', [s('spec.age', 'desc')]],
    ['name', [s('metadata.name')]],
    ['name,desc', [s('metadata.name', 'desc')]],
    ['metadata.name,desc', [s('metadata.name', 'desc')]],
    ['metadata.creationTimestamp,desc', [s('metadata.creationTimestamp', 'desc')]],
    [['spec.a,asc', 'spec.b,desc'], [s('spec.a'), s('spec.b', 'desc')]],
    [['spec.b,desc', 'spec.a'], [s('spec.b', 'desc'), s('spec.a')]],
    [['', 'spec.a,desc', ''], [s('spec.a', 'desc')]],
    ['spec.owner_id', [s('spec.owner_id')]],
    ['spec.x-y', [s('spec.x-y')]],
  ];
  it.each(cases)('%j', (input, expected) => {
    expect(parseSort(input)).toEqual(expected);
  });

  it('leaves duplicates to the planner', () => {
    expect(parseSort(['a', 'a,desc'])).toEqual([s('a'), s('a', 'desc')]);
  });
});

describe('parseSort: malformed input is a 400 naming the term', () => {
  const cases: Array<[string | string[], string]> = [
    [',asc', ',asc'],
    [',', ','],
    ['spec.age,', 'spec.age,'],
    ['spec.age,up', 'spec.age,up'],
    ['spec.age,ascending', 'spec.age,ascending'],
    ['spec.age desc', 'spec.age desc'],
    ['spec.age;desc', 'spec.age;desc'],
    ['spec.age,asc,spec.name,desc', 'spec.age,asc,spec.name,desc'],
    ['spec.a,spec.b,desc', 'spec.a,spec.b,desc'],
    ['spec.age,asc,', 'spec.age,asc,'],
    ['spec..age', 'spec..age'],
    ['.spec', '.spec'],
    ['spec.', 'spec.'],
    ['spec.age=1', 'spec.age=1'],
    ['-spec.age', '-spec.age'],
    ['+spec.age', '+spec.age'],
    ['spec age', 'spec age'],
    [['spec.a', 'spec.b,sideways'], 'spec.b,sideways'],
    ['  spec.age,bad  ', 'spec.age,bad'],
  ];
  it.each(cases)('%j', (input, term) => {
    let err: unknown;
    try {
      parseSort(input);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(BadRequest);
    expect((err as BadRequest).status).toBe(400);
    expect((err as BadRequest).message).toContain(`invalid sort "${term}"`);
  });
});

it('hints at the direction syntax for a "-" prefix', () => {
  expect(() => parseSort('-spec.age')).toThrow('write "spec.age,desc"');
  expect(() => parseSort('+spec.age')).toThrow('write "spec.age,asc"');
});
