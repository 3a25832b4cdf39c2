/**
 * schema/*.graphql and src/graphql/generated/types.ts are generated; this fails when they
 * are stale. Fix with: npm run schema:print && npm run codegen.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { generate } from '../../scripts/codegen.js';
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
});
