/**
 * No module-level mutable state: a gateway's state lives on the objects server.ts builds for it,
 * so two gateways in one process (the tests run many) share nothing. The check parses every
 * file under src/ with the TypeScript compiler and fails on
 *  - a top-level `let` or `var`;
 *  - a top-level `new Map`, `new Set` or `new WeakMap` that the file mutates (`x.set(`, `x.add(`,
 *    `x.delete(`, `x.clear(`); one that is only read is a constant table;
 * unless it is on the allowlist below, with the reason it is safe to share within a process.
 * Entries marked `pending:` are state another change is moving onto the gateway.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const SRC = join(ROOT, 'src');

/** `path:name` → why it may be process-wide. */
const ALLOWED: Record<string, string> = {
  // Process-wide by nature.
  'src/cli.ts:config': 'the process entry point runs one gateway',
  'src/cli.ts:gateway': 'the process entry point runs one gateway',
  'src/cli.ts:first': 'the process entry point: the first shutdown signal of the process',
  'src/observability/tracing.ts:active': "OpenTelemetry's tracer provider is a global of the process",
  'src/observability/tracing.ts:users': "OpenTelemetry's tracer provider is a global of the process (its users)",
  'src/plugins/code-loader.ts:typescript': "tsx's module hooks are registered once per process",
  'src/apidocs/pages.ts:graphiqlFiles': 'static asset cache: the files of an installed package',
  'src/authentication/password.ts:dummies': 'constants computed once per cost: the hashes checked for unknown users',
  // Memos of pure functions of immutable objects: nothing in them can differ between gateways.
  'src/operations/list.ts:indexNames': 'memo of a pure function of an immutable model',
  'src/operations/list.ts:numericNames': 'memo of a pure function of an immutable model',
  'src/graphql/json-schema-types.ts:cache': 'pending: graphql',
  'src/graphql/where.ts:cache': "memo of a pure function of an immutable model (its filter types; one instance per model so a schema has each type once)",
  'src/graphql/loader.ts:loaders': "keyed by one GraphQL operation's context object: nothing in it outlives that operation or is seen by another",
  'src/watch/encode.ts:encoded': 'memo of a pure function (JSON text) of an immutable event object',
  'src/watch/encode.ts:encodedBytes': 'memo of a pure function (UTF-8 bytes) of an immutable event object',
};

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

const COLLECTIONS = new Set(['Map', 'Set', 'WeakMap']);

/** `path:name` of every top-level mutable binding of a file. */
export function moduleState(file: string, text: string): string[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const out: string[] = [];
  for (const st of sf.statements) {
    if (!ts.isVariableStatement(st)) continue;
    const list = st.declarationList;
    const isConst = (list.flags & ts.NodeFlags.Const) !== 0;
    for (const d of list.declarations) {
      const names = ts.isIdentifier(d.name) ? [d.name.text] : d.name.elements.flatMap((e) => (ts.isBindingElement(e) && ts.isIdentifier(e.name) ? [e.name.text] : []));
      if (!isConst) {
        out.push(...names);
        continue;
      }
      const init = d.initializer;
      if (!init || !ts.isNewExpression(init) || !ts.isIdentifier(init.expression) || !COLLECTIONS.has(init.expression.text)) continue;
      for (const n of names) if (new RegExp(`\\b${n}\\s*\\.\\s*(set|add|delete|clear)\\s*\\(`).test(text)) out.push(n);
    }
  }
  return out.map((n) => `${file}:${n}`);
}

describe('module-level state', () => {
  const found = sources(SRC).flatMap((p) => moduleState(relative(ROOT, p).split('\\').join('/'), readFileSync(p, 'utf8')));

  it('every top-level let/var and mutated Map/Set/WeakMap under src/ is on the allowlist, with a reason', () => {
    expect(found.filter((k) => !(k in ALLOWED))).toEqual([]);
  });

  it('the allowlist names only state that still exists (prune entries whose state moved onto the gateway)', () => {
    expect(Object.keys(ALLOWED).filter((k) => !found.includes(k))).toEqual([]);
  });

  it('the check finds what it is meant to find', () => {
    const text = [
      'let a = 1;',
      'var b = 2;',
      'const c = new Map<string, number>();',
      'c.set("x", 1);',
      'const D = new Set(["read", "only"]);',
      'export let e: string | undefined;',
      'const f = new WeakMap<object, number>();',
      'export function g(o: object) { f.set(o, 1); let local = 0; return local; }',
    ].join('\n');
    expect(moduleState('x.ts', text)).toEqual(['x.ts:a', 'x.ts:b', 'x.ts:c', 'x.ts:e', 'x.ts:f']);
  });
});
