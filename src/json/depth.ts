/**
 * JSON nesting depth, checked before any recursive code (JSON.parse, ajv, fast-json-patch, the
 * merge patch, the stores) walks a document. `{}` and `[]` are depth 1, `{"a":[1]}` is 2;
 * scalars are 0. Both functions are iterative, so any input is safe to check.
 */
import { BadRequest } from '../errors/index.js';

/**
 * Depth of raw JSON text, counting `{`/`[` outside strings. Stops early (returns a value above
 * `max`) once `max` is exceeded. Malformed text gives some number; JSON.parse reports it.
 */
export function textDepth(text: string, max = Infinity): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > deepest) {
        deepest = depth;
        if (deepest > max) return deepest;
      }
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return deepest;
}

/** Depth of an already parsed value (objects and arrays count, like `textDepth`). */
export function valueDepth(value: unknown, max = Infinity): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 0]];
  const seen = new Set<object>();
  while (stack.length) {
    const [v, d] = stack.pop()!;
    if (typeof v !== 'object' || v === null || seen.has(v)) continue;
    seen.add(v);
    const depth = d + 1;
    if (depth > deepest) {
      deepest = depth;
      if (deepest > max) return deepest;
    }
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (typeof child === 'object' && child !== null) stack.push([child, depth]);
    }
  }
  return deepest;
}

const tooDeep = (what: string, max: number) =>
  new BadRequest(`${what} is nested more than ${max} levels deep (limit: JSON nesting depth ${max})`);

/** Throws 400 when raw JSON text nests deeper than `max` (the gateway's jsonDepth). */
export function checkTextDepth(text: string, what: string, max: number): void {
  if (textDepth(text, max) > max) throw tooDeep(what, max);
}
