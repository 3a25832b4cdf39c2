/**
 * labelSelector / fieldSelector parsing (docs/API.md §4). Every value may hold several
 * comma-separated terms; all terms of all values are ANDed.
 *
 *   selector := term ( ',' term )*           an empty / blank value holds no terms
 *   term     := '!' key                        notexists
 *             | key                            exists
 *             | key ( '=' | '==' ) operand     in
 *             | key '!=' operand               notin
 *             | key 'in' set                   in    (whitespace required before 'in')
 *             | key 'notin' set                notin (whitespace required before 'notin')
 *   operand  := value | set                    so `k=(a,b)` is in, `k!=(a,b)` is notin
 *   set      := '(' value ( ',' value )* ')'   at least one member; `()` is an empty set → 400
 *   key      := [A-Za-z0-9_./-]+               labels: `[prefix/]name` (docs/API.md §3);
 *                                              fields: a dotted path, `name` → `metadata.name`
 *   value    := ( plain | '\' escaped )*       may be empty (`k=`) for labels only
 *
 * Whitespace is allowed around every token. It ends a label value and a set member (write `\ `
 * for a literal space). A field selector's single value takes what people type: everything after
 * the operator up to the next unescaped comma, inner spaces included (`spec.author=Ada Lovelace`,
 * as Kubernetes reads field selectors); whitespace at its two ends is trimmed, like around every
 * other token, unless escaped (`\ `). Kubernetes keeps it, but there `k = v` is not a selector.
 * Reserved in values: , ( ) = ! \  (and < > ~ and whitespace where they end a value: in label
 * values and set members) — each is written as `\` + the character, which is also accepted for
 * < > ~ and whitespace anywhere. Any other escape (`\a`, a trailing `\`) is a 400. Escapes are
 * not allowed in keys. `escapeSelectorValue` (./escape.ts) writes any string as a value.
 * Commas inside `( … )` separate set members, not terms. Set members are de-duplicated.
 * Operators other than the above (`k>v`, `k=~v`, `k===v`, `k exists`) are rejected.
 * Every error is a BadRequest naming the offending term verbatim.
 */
import { BadRequest } from '../errors/index.js';
import type { Requirement } from './types.js';

export type SelectorKind = 'label' | 'field';

const KEY_CHAR = /[A-Za-z0-9_./-]/;
const WS = /\s/;
const RESERVED = new Set([',', '(', ')', '=', '!', '<', '>', '~', '\\']);
const OPERATOR_CHAR = /[=!<>~]/;
/** Reserved characters that are plain inside a field selector's single value (after its operator). */
const TYPED_PLAIN = new Set(['<', '>', '~']);

const LABEL_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const FIELD_PATH = /^[A-Za-z0-9_/-]+(\.[A-Za-z0-9_/-]+)*$/;

/** Parses repeated selector parameter values into ANDed requirements. */
export function parseSelector(values: string[] | string | undefined, kind: SelectorKind): Requirement[] {
  const list = values === undefined ? [] : Array.isArray(values) ? values : [values];
  const out: Requirement[] = [];
  for (const value of list) {
    for (const term of splitTerms(value, kind)) out.push(parseTerm(term, kind));
  }
  return out;
}

const paramName = (kind: SelectorKind): string => (kind === 'label' ? 'labelSelector' : 'fieldSelector');

const termError = (kind: SelectorKind, term: string, reason: string): BadRequest =>
  new BadRequest(`invalid ${paramName(kind)} term "${term}": ${reason}`);

/** Splits one parameter value at top-level, unescaped commas; returns trimmed raw terms. */
function splitTerms(value: string, kind: SelectorKind): string[] {
  if (value.trim() === '') return [];
  const terms: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < value.length; i++) {
    const c = value[i];
    if (c === '\\') i++;
    else if (c === '(') depth++;
    else if (c === ')') depth = Math.max(0, depth - 1);
    else if (c === ',' && depth === 0) {
      terms.push(trimTerm(value.slice(start, i)));
      start = i + 1;
    }
  }
  const last = trimTerm(value.slice(start));
  if (depth > 0) throw termError(kind, last, 'unbalanced parentheses: missing ")"');
  terms.push(last);
  for (const t of terms) {
    if (t === '') throw new BadRequest(`invalid ${paramName(kind)} "${value}": empty term (stray ",")`);
  }
  return terms;
}

/** Trims whitespace around a raw term, keeping a trailing escaped whitespace (`a\ `). */
function trimTerm(raw: string): string {
  const t = raw.trimStart();
  let end = t.length;
  while (end > 0 && WS.test(t[end - 1]!)) {
    let slashes = 0;
    while (end - 2 - slashes >= 0 && t[end - 2 - slashes] === '\\') slashes++;
    if (slashes % 2 === 1) break;
    end--;
  }
  return t.slice(0, end);
}

/** A cursor over one raw term. */
class Cursor {
  i = 0;
  constructor(readonly s: string) {}
  get done(): boolean {
    return this.i >= this.s.length;
  }
  get c(): string {
    return this.s[this.i] ?? '';
  }
  skipWs(): boolean {
    const from = this.i;
    while (!this.done && WS.test(this.c)) this.i++;
    return this.i > from;
  }
  take(re: RegExp): string {
    const from = this.i;
    while (!this.done && re.test(this.c)) this.i++;
    return this.s.slice(from, this.i);
  }
}

function parseTerm(term: string, kind: SelectorKind): Requirement {
  const fail = (reason: string): never => {
    throw termError(kind, term, reason);
  };
  const cur = new Cursor(term);
  const expectEnd = (after: string): void => {
    cur.skipWs();
    if (!cur.done) fail(`unexpected "${cur.c}" after ${after}`);
  };

  if (cur.c === '!') {
    cur.i++;
    cur.skipWs();
    const key = readKey(cur, fail);
    expectEnd(`"!${key}"`);
    return { key: checkKey(key, kind, fail), op: 'notexists', values: [] };
  }

  const rawKey = readKey(cur, fail);
  const key = checkKey(rawKey, kind, fail);
  const hadWs = cur.skipWs();
  if (cur.done) return { key, op: 'exists', values: [] };

  let op: 'in' | 'notin';
  let setOnly = false;
  if (cur.c === '=' || cur.c === '!') {
    const opText = cur.take(OPERATOR_CHAR);
    if (opText === '=' || opText === '==') op = 'in';
    else if (opText === '!=') op = 'notin';
    else return fail(`unknown operator "${opText}"`);
  } else if (hadWs && /[A-Za-z]/.test(cur.c)) {
    const word = cur.take(/[A-Za-z]/);
    if (word === 'in') op = 'in';
    else if (word === 'notin') op = 'notin';
    else return fail(`unknown operator "${word}"`);
    setOnly = true;
  } else if (cur.c === '\\') {
    return fail('escapes are not allowed in keys');
  } else {
    const opText = cur.take(/[^\sA-Za-z0-9_./\\(),-]/);
    return fail(opText ? `unknown operator "${opText}"` : `unexpected "${cur.c}" after key`);
  }

  cur.skipWs();
  let values: string[];
  if (cur.c === '(') {
    values = readSet(cur, fail);
    expectEnd('")"');
  } else {
    if (setOnly) fail(`expected "(" after "${op}"`);
    values = [readValue(cur, fail, kind === 'field')];
    expectEnd('value');
  }
  for (const v of values) checkValue(v, kind, fail);
  return { key, op, values };
}

function readKey(cur: Cursor, fail: (reason: string) => never): string {
  const key = cur.take(KEY_CHAR);
  if (key === '') {
    if (cur.done) fail('empty key');
    fail(cur.c === '\\' ? 'escapes are not allowed in keys' : `empty key (unexpected "${cur.c}")`);
  }
  return key;
}

/**
 * Reads one value up to the end, a reserved character (which is left for the caller) or, unless
 * `typed` (a field selector's single value: spaces and < > ~ are part of it), whitespace.
 */
function readValue(cur: Cursor, fail: (reason: string) => never, typed = false): string {
  let out = '';
  while (!cur.done && (typed || !WS.test(cur.c))) {
    const c = cur.c;
    if (c === '\\') {
      const next = cur.s[cur.i + 1];
      if (next === undefined) fail('dangling "\\" at end of value');
      if (!RESERVED.has(next) && !WS.test(next)) fail(`invalid escape "\\${next}"`);
      out += next;
      cur.i += 2;
      continue;
    }
    if (RESERVED.has(c) && !(typed && TYPED_PLAIN.has(c))) {
      if (c === ',' || c === ')') break; // set separators; top-level commas never reach here
      fail(`unexpected "${c}" in value (escape it as "\\${c}")`);
    }
    out += c;
    cur.i++;
  }
  return out;
}

function readSet(cur: Cursor, fail: (reason: string) => never): string[] {
  cur.i++; // '('
  const values: string[] = [];
  for (;;) {
    cur.skipWs();
    const v = readValue(cur, fail);
    cur.skipWs();
    values.push(v);
    if (cur.c === ',') {
      cur.i++;
      continue;
    }
    if (cur.c === ')') {
      cur.i++;
      break;
    }
    if (cur.done) fail('unbalanced parentheses: missing ")"');
    fail(`unexpected "${cur.c}" in set`);
  }
  if (values.length === 1 && values[0] === '') fail('empty set "()"');
  return [...new Set(values)];
}

function checkKey(key: string, kind: SelectorKind, fail: (reason: string) => never): string {
  if (kind === 'field') {
    if (!FIELD_PATH.test(key)) fail(`invalid field path "${key}"`);
    return key === 'name' ? 'metadata.name' : key;
  }
  const reason = labelKeyProblem(key);
  if (reason) fail(`invalid label key "${key}": ${reason}`);
  return key;
}

function checkValue(value: string, kind: SelectorKind, fail: (reason: string) => never): void {
  if (kind === 'field') {
    if (value === '') fail('empty value (use "!field" to select objects without a value)');
    return;
  }
  const reason = labelValueProblem(value);
  if (reason) fail(`invalid label value "${value}": ${reason}`);
}

/** Why a label key breaks docs/API.md §3, or undefined when it is valid. */
export function labelKeyProblem(key: string): string | undefined {
  const slash = key.indexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== undefined) {
    if (prefix.length === 0) return 'empty prefix';
    if (prefix.length > 253) return 'prefix longer than 253 characters';
    if (!DNS_SUBDOMAIN.test(prefix)) return 'prefix must be a DNS subdomain (lowercase alphanumerics, "-" and ".")';
  }
  if (name.length === 0) return 'empty name';
  if (name.length > 63) return 'name longer than 63 characters';
  if (!LABEL_NAME.test(name)) return 'name must be alphanumerics, "-", "_" or ".", starting and ending alphanumeric';
  return undefined;
}

/** Why a label value breaks docs/API.md §3, or undefined when it is valid (empty is valid). */
export function labelValueProblem(value: string): string | undefined {
  if (value === '') return undefined;
  if (value.length > 63) return 'longer than 63 characters';
  if (!LABEL_NAME.test(value)) return 'must be alphanumerics, "-", "_" or ".", starting and ending alphanumeric';
  return undefined;
}
