/**
 * Sources cite the contract in the repository (docs/API.md §N, docs/ARCHITECTURE.md), never the
 * documents it came from (CONTRACT §N, SPEC.md), which a reader of the project does not have.
 * Fix a finding with `perl -i scripts/cite-docs.pl <file>`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = path.resolve(import.meta.dirname, '../../src');
const FOREIGN = /\bCONTRACT §|\bSPEC\.md\b/;

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    return e.isDirectory() ? sourceFiles(full) : /\.(ts|md|ya?ml)$/.test(e.name) ? [full] : [];
  });
}

describe('citations in src/', () => {
  it('no file cites CONTRACT or SPEC.md', () => {
    const findings = sourceFiles(SRC).flatMap((file) =>
      fs
        .readFileSync(file, 'utf8')
        .split('\n')
        .flatMap((line, i) => (FOREIGN.test(line) ? [`${path.relative(SRC, file)}:${i + 1}: ${line.trim()}`] : [])),
    );
    expect(findings).toEqual([]);
  });

  it('the pattern finds the old forms', () => {
    expect(FOREIGN.test(' * Rules (CONTRACT §3).')).toBe(true);
    expect(FOREIGN.test(' * IndexSpec (SPEC.md "Index declaration").')).toBe(true);
    expect(FOREIGN.test(' * Rules (docs/API.md §3).')).toBe(false);
  });
});
