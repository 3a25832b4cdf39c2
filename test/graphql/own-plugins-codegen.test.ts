/**
 * A team with its own plugins prints and types its own schema: `npm run schema:print` and
 * `npm run codegen` run as child processes from a project folder of their own, with
 * SVC_PLUGINS_DIR naming its plugins and the outputs given with --out / --client-out (relative
 * to where npm runs). The repository's generated files are never touched, and without an output
 * the scripts refuse. The generated TypeScript compiles, and types the team's model.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = join(import.meta.dirname, '../..');
const REPO_OUTPUTS = ['schema/base.graphql', 'schema/full.graphql', 'src/graphql/generated/types.ts'];

const WIDGETS = `apiVersion: plugin.svc.run/v1alpha1
kind: Plugin
metadata:
  name: widgets
spec:
  models:
    - group: acme.example.org
      version: v1
      kind: Widget
      schema:
        properties:
          spec:
            type: object
            required: [size]
            properties:
              size: { type: integer }
              color: { type: string, enum: [RED, BLUE] }
      indexes:
        - { name: spec.size, path: spec.size }
`;
// A model declared in code counts too, and so do custom GraphQL fields.
const GADGETS = `export default {
  models: [{ group: 'acme.example.org', version: 'v1', kind: 'Gadget', schema: { properties: { spec: { type: 'object', properties: { label: { type: 'string' } } } } } }],
  graphql: {
    typeDefs: 'extend type Query { widgetCount: Int! @auth(verb: "list", resource: "widgets", group: "acme.example.org", version: "v1") }',
    resolvers: { Query: { widgetCount: () => 0 } },
  },
};
`;

const WIDGET_QUERY = `query Widgets($size: [String!]) {
  acmeExampleOrg_v1_widgets(fieldSelector: $size) { total items { metadata { name } spec { size color } } }
}
`;

/** Uses what the team generated; `tsc` must accept it and refuse the @ts-expect-error lines' mistakes. */
const USE = `import type { AcmeExampleOrgV1WidgetSpec, AcmeExampleOrgV1Gadget } from './types.js';
import { WidgetsDocument, type WidgetsQuery } from './gql/graphql.js';
import type { TypedDocumentNode } from '@graphql-typed-document-node/core';

export const spec: AcmeExampleOrgV1WidgetSpec = { size: 3, color: 'RED' };
// @ts-expect-error GREEN is not in the enum
export const green: AcmeExampleOrgV1WidgetSpec = { size: 3, color: 'GREEN' };
export const label = (g: AcmeExampleOrgV1Gadget) => g.spec?.label;
export const doc: TypedDocumentNode<WidgetsQuery, { size?: string[] | null }> = WidgetsDocument;
export const sizes = (q: WidgetsQuery): (number | null | undefined)[] => q.acmeExampleOrg_v1_widgets.items.map((w) => w.spec?.size);
// @ts-expect-error the document does not select metadata.labels
export const labels = (q: WidgetsQuery) => q.acmeExampleOrg_v1_widgets.items.map((w) => w.metadata?.labels);
`;

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

describe('schema:print and codegen over SVC_PLUGINS_DIR', () => {
  let project: string;
  let before: string[];

  /** `npm run <script> -- <args>` in the repository, started from the team's project folder. */
  async function npm(script: string, args: string[], env: Record<string, string> = { SVC_PLUGINS_DIR: './plugins' }): Promise<Ran> {
    try {
      const r = await run('npm', ['--prefix', root, 'run', '--silent', script, '--', ...args], { cwd: project, env: { ...process.env, ...env } });
      return { code: 0, ...r };
    } catch (e) {
      const x = e as { code: number; stdout: string; stderr: string };
      return { code: x.code, stdout: x.stdout, stderr: x.stderr };
    }
  }
  const repoOutputs = () => Promise.all(REPO_OUTPUTS.map((f) => readFile(join(root, f), 'utf8')));

  beforeAll(async () => {
    project = await mkdtemp(join(tmpdir(), 'svc-team-'));
    await mkdir(join(project, 'plugins/widgets'), { recursive: true });
    await writeFile(join(project, 'plugins/widgets/plugin.yaml'), WIDGETS);
    await writeFile(join(project, 'plugins/widgets/index.mjs'), GADGETS);
    await mkdir(join(project, 'src'));
    await writeFile(join(project, 'src/widgets.graphql'), WIDGET_QUERY);
    await symlink(join(root, 'node_modules'), join(project, 'node_modules'));
    before = await repoOutputs();
  });
  afterAll(async () => {
    await rm(project, { recursive: true, force: true });
  });

  it('without an output both scripts refuse, naming the option; a missing folder is named', async () => {
    for (const script of ['schema:print', 'codegen']) {
      const r = await npm(script, []);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(/SVC_PLUGINS_DIR=\.\/plugins names other plugins than the repository's: give an output file, e\.g\. npm run .* -- --out /);
      expect(r.stderr).not.toMatch(/\bat .*\.ts:\d+/); // no stack
    }
    const schemaOnly = await npm('codegen', ['--schema', 'x.graphql'], {});
    expect(schemaOnly.code).toBe(2);
    expect(schemaOnly.stderr).toContain('--schema types another schema: give --out');
    const missing = await npm('schema:print', ['--out', 'x.graphql'], { SVC_PLUGINS_DIR: './nowhere' });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(`SVC_PLUGINS_DIR=./nowhere: no such folder (${join(project, 'nowhere')})`);
    expect(await repoOutputs()).toEqual(before);
  }, 120_000);

  it('schema:print --out prints the platform and the team plugins, not the repository plugins', async () => {
    const r = await npm('schema:print', ['--out', 'schema.graphql']);
    expect(r.code, r.stderr).toBe(0);
    const schema = await readFile(join(project, 'schema.graphql'), 'utf8');
    expect(schema).toContain('type AcmeExampleOrgV1Widget');
    expect(schema).toContain('type AcmeExampleOrgV1Gadget');
    expect(schema).toContain('acmeExampleOrg_v1_widgets(');
    expect(schema).toContain('widgetCount: Int! @auth(verb: "list", resource: "widgets", group: "acme.example.org", version: "v1")');
    expect(schema).toContain('type CoreV1alpha1Role'); // the platform
    expect(schema).not.toContain('PeopleExampleCom'); // the repository's example plugins
    expect(await repoOutputs()).toEqual(before);
  }, 120_000);

  it('codegen --out and --client-out type the team schema and documents, and the result compiles', async () => {
    const r = await npm('codegen', ['--out', 'types.ts', '--client-out', 'gql/', '--documents', 'src/**/*.graphql']);
    expect(r.code, r.stderr).toBe(0);
    const types = await readFile(join(project, 'types.ts'), 'utf8');
    expect(types).toMatch(/export type AcmeExampleOrgV1Widget = (Node & )?\{/);
    expect(types).not.toContain('PeopleExampleCom');
    const manifest = JSON.parse(await readFile(join(project, 'gql/persisted-documents.json'), 'utf8'));
    expect(Object.keys(manifest)).toHaveLength(1);
    expect(Object.keys(manifest)[0]).toMatch(/^[0-9a-f]{64}$/);
    // The same types from a printed schema (--schema), no plugins needed.
    expect((await npm('schema:print', ['--out', 'schema.graphql'])).code).toBe(0);
    const fromFile = await npm('codegen', ['--schema', 'schema.graphql', '--out', 'types2.ts'], {});
    expect(fromFile.code, fromFile.stderr).toBe(0);
    expect(await readFile(join(project, 'types2.ts'), 'utf8')).toBe(types);
    expect(await repoOutputs()).toEqual(before);

    await writeFile(join(project, 'use.ts'), USE);
    const tsc = join(root, 'node_modules/typescript/bin/tsc');
    const opts = ['--noEmit', '--pretty', 'false', '--strict', '--skipLibCheck', '--target', 'ES2022', '--module', 'NodeNext', '--moduleResolution', 'NodeNext', '--types', 'node'];
    const compiled = await run(process.execPath, [tsc, ...opts, 'use.ts'], { cwd: project }).then(
      () => '',
      (e: { stdout: string }) => e.stdout,
    );
    expect(compiled).toBe('');
  }, 180_000);
});
