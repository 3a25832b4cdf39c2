/**
 * The layer rule of docs/ARCHITECTURE.md, checked over every import of `src/**\/*.ts`: a file may
 * import its own layer or a layer of a lower rank, never a higher one or a different layer of the
 * same rank; and no two folders import each other, directly or through others.
 *
 * Imports are read with the TypeScript scanner (`ts.preProcessFile`): `import … from`,
 * `import type`, `export … from`, `import('…')` (also in type positions) and side-effect imports.
 * Only relative specifiers count; packages are outside the layering.
 *
 * KNOWN lists the arrows that break the rule on main today and that another piece of issue 23 is
 * removing. An entry that no longer occurs fails the test, so the list only shrinks.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/** One layer: which files it holds (folders end in `/`, paths are relative to `src/`). */
export interface Layer {
  name: string;
  /** Higher imports lower. Layers of equal rank do not import each other. */
  rank: number;
  paths: string[];
  /** When set, the only other layers this one may import (still all of lower rank). */
  only?: string[];
}

/**
 * The table of docs/ARCHITECTURE.md ("Layers"), lowest first. A file-level path wins over its
 * folder (the longest matching path decides).
 */
export const LAYERS: Layer[] = [
  { name: 'base', rank: 0, paths: ['limits.ts', 'json/', 'errors/'] },
  { name: 'store', rank: 1, paths: ['store/', 'store/feed/'] },
  { name: 'requestinfo', rank: 1, paths: ['requestinfo/'] },
  { name: 'transport', rank: 1, paths: ['transport/'] },
  { name: 'adapters', rank: 2, paths: ['store/mongo/', 'store/embedded/'], only: ['store', 'base'] },
  { name: 'query', rank: 2, paths: ['query/'] },
  // Who is calling and the Authorizer port, below registry/ (issue 23; boundaries creates it).
  { name: 'identity', rank: 2, paths: ['identity/'] },
  { name: 'registry', rank: 3, paths: ['registry/'] },
  { name: 'authentication', rank: 4, paths: ['authentication/'] },
  { name: 'authorization', rank: 5, paths: ['authorization/'] },
  // The watch engine the thin verb operations/watch.ts drives (gates, caches, quota, open
  // watches, settings, shared frames). It calls no verb: a door opens the watch through
  // operations/ and hands the stream to its own sink (rest/watch.ts, graphql/event-stream.ts).
  { name: 'watch', rank: 6, paths: ['watch/'] },
  { name: 'operations', rank: 7, paths: ['operations/'] },
  { name: 'observability', rank: 7, paths: ['observability/'] },
  { name: 'doors', rank: 8, paths: ['rest/', 'graphql/', 'console/', 'plugins/'] },
  { name: 'bootstrap', rank: 8, paths: ['bootstrap/'] },
  { name: 'apidocs', rank: 9, paths: ['apidocs/'] },
  { name: 'pipeline', rank: 10, paths: ['pipeline/'] },
  { name: 'app', rank: 11, paths: ['server.ts', 'cli.ts', 'config.ts'] },
];

/** An arrow that breaks the rule today, the piece of issue 23 removing it, and why it is wrong. */
export interface Known {
  from: string;
  to: string;
  owner: 'watch-net' | 'boundaries' | 'graphql' | 'lead';
  why: string;
}

export const KNOWN: Known[] = [
];

export interface Import {
  from: string;
  to: string;
  specifier: string;
}

/** Every relative import of every `.ts` file under `srcDir`, as paths relative to `srcDir`. */
export function readImports(srcDir: string): { files: string[]; imports: Import[] } {
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name.endsWith('.ts')) files.push(path.relative(srcDir, full).split(path.sep).join('/'));
    }
  };
  walk(srcDir);
  files.sort();
  const imports: Import[] = [];
  for (const file of files) {
    const text = fs.readFileSync(path.join(srcDir, file), 'utf8');
    const info = ts.preProcessFile(text, true, true);
    for (const ref of info.importedFiles) {
      const specifier = ref.fileName;
      if (!specifier.startsWith('.')) continue;
      const target = path.posix.normalize(path.posix.join(path.posix.dirname(file), specifier)).replace(/\.js$/, '.ts');
      if (target.startsWith('../')) continue; // outside src/ (package.json and the like)
      imports.push({ from: file, to: target, specifier });
    }
  }
  return { files, imports };
}

/** The layer of a file: its longest matching path in the table. */
export function layerOf(file: string, layers: Layer[]): Layer | undefined {
  let best: Layer | undefined;
  let bestLength = -1;
  for (const layer of layers) {
    for (const p of layer.paths) {
      const hit = p.endsWith('/') ? file.startsWith(p) : file === p;
      if (hit && p.length > bestLength) {
        best = layer;
        bestLength = p.length;
      }
    }
  }
  return best;
}

/** The folder of a file for the cycle check: its directory, or the file itself at the root. */
export function folderOf(file: string): string {
  const dir = path.posix.dirname(file);
  return dir === '.' ? file : `${dir}/`;
}

const isKnown = (i: Import, known: Known[]): boolean => known.some((k) => k.from === i.from && k.to === i.to);

/** Imports that go up (or sideways) between layers, as readable lines naming file and import. */
export function layerViolations(files: string[], imports: Import[], layers: Layer[], known: Known[]): string[] {
  const out: string[] = [];
  for (const file of files) {
    if (!layerOf(file, layers)) out.push(`${file}: in no layer; add its folder to LAYERS (and to docs/ARCHITECTURE.md)`);
  }
  for (const i of imports) {
    if (isKnown(i, known)) continue;
    const a = layerOf(i.from, layers);
    const b = layerOf(i.to, layers);
    if (!a || !b || a === b) continue;
    const allowed = b.rank < a.rank && (!a.only || a.only.includes(b.name));
    if (!allowed) {
      const how = b.rank > a.rank ? 'a higher layer' : b.rank === a.rank ? 'a layer of the same rank' : 'a layer it may not use';
      out.push(`${i.from} (${a.name}) imports '${i.specifier}' = ${i.to} (${b.name}): ${how}`);
    }
  }
  return out;
}

/** Folder cycles (strongly connected components of the folder graph), KNOWN arrows left out. */
export function folderCycles(imports: Import[], known: Known[]): string[] {
  const edges = new Map<string, Map<string, Import>>();
  for (const i of imports) {
    if (isKnown(i, known)) continue;
    const a = folderOf(i.from);
    const b = folderOf(i.to);
    if (a === b) continue;
    if (!edges.has(a)) edges.set(a, new Map());
    if (!edges.get(a)!.has(b)) edges.get(a)!.set(b, i);
  }
  // Tarjan's algorithm.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  let next = 0;
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v)?.keys() ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) components.push(component.sort());
    }
  };
  for (const v of [...edges.keys()].sort()) if (!index.has(v)) visit(v);
  return components.map((component) => {
    const inside = new Set(component);
    const arrows = component.flatMap((a) =>
      [...(edges.get(a) ?? new Map<string, Import>()).entries()]
        .filter(([b]) => inside.has(b))
        .map(([, i]) => `${i.from} → '${i.specifier}'`),
    );
    return `cycle between ${component.join(', ')}: ${arrows.join('; ')}`;
  });
}

/** KNOWN entries that no longer occur: remove them. */
export function staleKnown(imports: Import[], known: Known[]): string[] {
  return known
    .filter((k) => !imports.some((i) => i.from === k.from && i.to === k.to))
    .map((k) => `KNOWN ${k.from} → ${k.to} (${k.owner}) no longer occurs: remove it from KNOWN`);
}

const SRC = path.resolve(import.meta.dirname, '../../src');

describe('layers of src/ (docs/ARCHITECTURE.md)', () => {
  const { files, imports } = readImports(SRC);

  it('reads the imports of every source file', () => {
    expect(files.length).toBeGreaterThan(100);
    // A sample that must be found: a plain import, a type import and a dynamic import.
    expect(imports).toContainEqual(expect.objectContaining({ from: 'server.ts', to: 'pipeline/pipeline.ts' }));
    expect(imports).toContainEqual(expect.objectContaining({ from: 'pipeline/routes.ts', to: 'identity/caller.ts' }));
    expect(imports).toContainEqual(expect.objectContaining({ from: 'observability/tracing.ts', to: 'observability/otel.ts' }));
  });

  it('every file is in a layer, and no import goes to a higher layer (except KNOWN)', () => {
    expect(layerViolations(files, imports, LAYERS, KNOWN)).toEqual([]);
  });

  it('no two folders import each other, directly or in a ring (except KNOWN arrows)', () => {
    expect(folderCycles(imports, KNOWN)).toEqual([]);
  });

  it('every KNOWN arrow still occurs (remove an entry once its owner has fixed it)', () => {
    expect(staleKnown(imports, KNOWN)).toEqual([]);
  });

  it('the table itself points downwards: every `only` names lower layers', () => {
    const rank = new Map(LAYERS.map((l) => [l.name, l.rank]));
    for (const layer of LAYERS) {
      for (const name of layer.only ?? []) expect(rank.get(name), `${layer.name} → ${name}`).toBeLessThan(layer.rank);
    }
  });
});

describe('the checker itself', () => {
  const layers: Layer[] = [
    { name: 'low', rank: 0, paths: ['low/'] },
    { name: 'mid', rank: 1, paths: ['mid/', 'side/'] },
    { name: 'side', rank: 1, paths: ['other/'] },
    { name: 'high', rank: 2, paths: ['high/'], only: ['mid'] },
  ];
  const files = ['low/a.ts', 'mid/b.ts', 'other/c.ts', 'high/d.ts', 'lost/e.ts'];
  const imp = (from: string, to: string): Import => ({ from, to, specifier: `../${to.replace(/\.ts$/, '.js')}` });

  it('names the file and the import of an upward, a sideways and a forbidden arrow, and unplaced files', () => {
    const imports = [imp('mid/b.ts', 'low/a.ts'), imp('low/a.ts', 'mid/b.ts'), imp('mid/b.ts', 'other/c.ts'), imp('high/d.ts', 'low/a.ts')];
    expect(layerViolations(files, imports, layers, [])).toEqual([
      'lost/e.ts: in no layer; add its folder to LAYERS (and to docs/ARCHITECTURE.md)',
      "low/a.ts (low) imports '../mid/b.js' = mid/b.ts (mid): a higher layer",
      "mid/b.ts (mid) imports '../other/c.js' = other/c.ts (side): a layer of the same rank",
      "high/d.ts (high) imports '../low/a.js' = low/a.ts (low): a layer it may not use",
    ]);
  });

  it('finds a ring of folders and lets KNOWN arrows out of it; a KNOWN arrow that is gone is stale', () => {
    const ring = [imp('mid/b.ts', 'low/a.ts'), imp('low/a.ts', 'side/x.ts'), imp('side/x.ts', 'mid/b.ts')];
    expect(folderCycles(ring, [])).toEqual([
      "cycle between low/, mid/, side/: low/a.ts → '../side/x.js'; mid/b.ts → '../low/a.js'; side/x.ts → '../mid/b.js'",
    ]);
    const known: Known[] = [{ from: 'low/a.ts', to: 'side/x.ts', owner: 'lead', why: 'test' }];
    expect(folderCycles(ring, known)).toEqual([]);
    expect(staleKnown(ring, known)).toEqual([]);
    expect(staleKnown(ring.filter((i) => i.from !== 'low/a.ts'), known)).toHaveLength(1);
  });

  it('reads every form of import: plain, type-only, re-export, side effect, import() in code and in types', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'layers-'));
    try {
      fs.mkdirSync(path.join(dir, 'a'));
      fs.writeFileSync(
        path.join(dir, 'a/x.ts'),
        [
          "import { one } from '../b/one.js';",
          "import type { Two } from '../b/two.js';",
          "export { three } from '../b/three.js';",
          "export * from '../b/four.js';",
          "import '../b/five.js';",
          "const six = await import('../b/six.js');",
          "type Seven = import('../b/seven.js').Seven;",
          "import {",
          '  eight,',
          "} from './eight.js';",
          "import fs from 'node:fs';",
          "// import { no } from '../b/comment.js';",
          "import json from '../../outside.json';",
        ].join('\n'),
      );
      const { files, imports } = readImports(dir);
      expect(files).toEqual(['a/x.ts']);
      expect(imports.map((i) => i.to).sort()).toEqual(
        ['a/eight.ts', 'b/five.ts', 'b/four.ts', 'b/one.ts', 'b/seven.ts', 'b/six.ts', 'b/three.ts', 'b/two.ts'],
      );
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a file-level path wins over its folder', () => {
    const table: Layer[] = [
      { name: 'net', rank: 1, paths: ['http/read-body.ts'] },
      { name: 'pipeline', rank: 9, paths: ['http/'] },
    ];
    expect(layerOf('http/read-body.ts', table)?.name).toBe('net');
    expect(layerOf('http/pipeline.ts', table)?.name).toBe('pipeline');
  });
});
