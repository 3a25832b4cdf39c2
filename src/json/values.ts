/**
 * The string values of a field of a JSON object, as indexes see them: strings as they are,
 * numbers and booleans as text, arrays fanned out, null and missing as nothing. Shared by the
 * registry (compiling declared indexes) and stores (computing a path index they only know by
 * its path).
 */

/** Appends the scalar values of `value` to `out` (arrays fan out; objects, null and undefined give none). */
export function scalarValues(value: unknown, out: string[]): void {
  if (value === undefined || value === null) return;
  if (Array.isArray(value)) {
    for (const v of value) scalarValues(v, out);
    return;
  }
  if (typeof value === 'string') out.push(value);
  else if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') out.push(String(value));
}

/** Walks a dotted path; arrays met on the way fan out (multi-valued index). */
export function valuesAtPath(obj: unknown, path: string[]): string[] {
  let current: unknown[] = [obj];
  for (const seg of path) {
    const next: unknown[] = [];
    for (const c of current) {
      const items = Array.isArray(c) ? c : [c];
      for (const item of items) {
        if (item !== null && typeof item === 'object' && !Array.isArray(item) && seg in item) {
          next.push((item as Record<string, unknown>)[seg]);
        }
      }
    }
    current = next;
  }
  const out: string[] = [];
  for (const c of current) scalarValues(c, out);
  return out;
}
