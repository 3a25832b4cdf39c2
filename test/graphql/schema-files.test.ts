/**
 * schema/*.graphql and src/graphql/generated/types.ts are generated; this fails when they
 * are stale. Fix with: npm run schema:print && npm run codegen.
 */
import { cp, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { generate, generateTypes } from '../../scripts/codegen.js';
import { renderSchemas, SCHEMA_FILES } from '../../scripts/print-schema.js';

const root = join(import.meta.dirname, '../..');
const HINT = 'stale: run `npm run schema:print && npm run codegen`';

describe('generated schema files', () => {
  it('schema/base.graphql and schema/full.graphql match the current code and plugins', async () => {
    const { base, full } = await renderSchemas();
    expect(await readFile(SCHEMA_FILES.base, 'utf8'), `schema/base.graphql is ${HINT}`).toBe(base);
    expect(await readFile(SCHEMA_FILES.full, 'utf8'), `schema/full.graphql is ${HINT}`).toBe(full);
    expect(base).toContain('directive @auth(');
    expect(full).toContain('peopleExampleCom_v1alpha1_createPerson(object: PeopleExampleComV1alpha1PersonInput!): PeopleExampleComV1alpha1Person! @auth(verb: "create", resource: "persons", group: "people.example.com", version: "v1alpha1")');
  });

  it('the codegen output matches schema/full.graphql', async () => {
    const { full } = await renderSchemas();
    for (const [file, text] of Object.entries(await generate(full))) {
      expect(await readFile(join(root, file), 'utf8'), `${file} is ${HINT}`).toBe(text);
    }
  });

  // The scripts themselves, run with SVC_PLUGINS_DIR and their output options: own-plugins-codegen.test.ts.
  it('another plugins folder is printed (and typed) without the repository plugins: a team prints its own schema', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'svc-schema-'));
    try {
      await cp(join(root, 'plugins/crm'), join(dir, 'crm'), { recursive: true });
      const { full } = await renderSchemas(dir);
      expect(full).toContain('type CrmExampleNetV1Deal implements Node');
      expect(full).not.toContain('PeopleExampleCom');
      const types = await generateTypes(full);
      expect(types).toContain('CrmExampleNetV1Deal');
      expect(types).not.toContain('PeopleExampleCom');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
