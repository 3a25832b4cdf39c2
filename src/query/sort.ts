/**
 * `sort` parameter parsing (docs/API.md §4). One value = one sort term; repeat the parameter
 * for several terms (Spring style: `sort=a,asc&sort=b,desc`), earlier values sort first.
 *
 *   value     := ws? field ws? ( ',' ws? direction ws? )?
 *   field     := [A-Za-z0-9_/-]+ ( '.' [A-Za-z0-9_/-]+ )*    `name` → `metadata.name`
 *   direction := 'asc' | 'desc'                                 case-insensitive; default asc
 *
 * A blank value is ignored (as if absent). `-field` / `+field` prefixes are rejected with a hint. Several pairs in one value (`a,asc,b,desc`) and
 * Spring's `a,b,desc` shorthand are rejected: the second is ambiguous, so we accept neither.
 * Whether a field is indexed, and duplicate fields, are checked by query/plan.ts.
 */
import { BadRequest } from '../errors/index.js';
import type { SortSpec } from './types.js';

const FIELD_PATH = /^[A-Za-z0-9_/-]+(\.[A-Za-z0-9_/-]+)*$/;

export function parseSort(values: string[] | string | undefined): SortSpec[] {
  const list = values === undefined ? [] : Array.isArray(values) ? values : [values];
  const out: SortSpec[] = [];
  for (const raw of list) {
    const term = raw.trim();
    if (term === '') continue;
    const fail = (reason: string): never => {
      throw new BadRequest(`invalid sort "${term}": ${reason}; expected "field,asc" or "field,desc"`);
    };
    const parts = term.split(',').map((p) => p.trim());
    if (parts.length > 2) fail('one field per sort parameter (repeat "sort" for more fields)');
    const [field = '', dir] = parts;
    if (field === '') fail('empty field');
    if (/^[-+]/.test(field)) fail(`a "${field[0]}" prefix is not supported, write "${field.slice(1)},${field[0] === '-' ? 'desc' : 'asc'}"`);
    if (!FIELD_PATH.test(field)) fail(`invalid field "${field}"`);
    let direction: SortSpec['direction'] = 'asc';
    if (dir !== undefined) {
      const d = dir.toLowerCase();
      if (d === 'asc' || d === 'desc') direction = d;
      else fail(dir === '' ? 'empty direction' : `unknown direction "${dir}"`);
    }
    out.push({ field: field === 'name' ? 'metadata.name' : field, direction });
  }
  return out;
}
