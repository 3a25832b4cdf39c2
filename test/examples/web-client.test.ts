/**
 * The example front-end (examples/web-client) typechecks with its own tsconfig (browser lib,
 * bundler resolution) against the documents `npm run codegen` generated, and a mistake in it is
 * caught; then its client code runs against a real gateway on both stores, signed in with a
 * personal access token as a browser would be (Bearer over HTTP, the token sub-protocol on the
 * WebSocket): it walks a list page by page with a selector and follows its changes through a
 * subscription with the same selector.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCrmClient, type CrmClient } from '../../examples/web-client/src/client.js';
import { contactsByTag, watchContacts, type ContactEvent } from '../../examples/web-client/src/crm.js';
import { call, startTestGateway, STORES, type TestGateway } from '../helpers/gateway.js';
import { eventually } from '../plugins/fixtures.js';

const run = promisify(execFile);
const root = join(import.meta.dirname, '../..');
const EXAMPLE = join(root, 'examples/web-client');
const TOKENS = '/apis/uc.api.security.svc.run/v1alpha1/personalaccesstokens';
const PEOPLE = '/apis/crm.example.net/v1/people';

describe('examples/web-client typechecks', () => {
  let check: string;
  afterAll(() => rm(check, { recursive: true, force: true }));

  it('tsc passes on the example and catches a field the documents do not select', async () => {
    // The example's own settings, plus one file with a mistake.
    check = await mkdtemp(join(EXAMPLE, '.check-'));
    await writeFile(
      join(check, 'bad.ts'),
      "import type { Contact } from '../src/crm.js';\nexport const phone = (c: Contact) => c.spec?.phone;\n",
    );
    await writeFile(join(check, 'tsconfig.json'), JSON.stringify({ extends: '../tsconfig.json', include: ['../src'], files: ['bad.ts'] }));
    const errors = await run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '--pretty', 'false', '-p', check], { cwd: check })
      .then(() => [] as string[])
      .catch((e: { stdout: string }) => e.stdout.split('\n').filter((l) => /error TS/.test(l)));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/bad\.ts.*Property 'phone' does not exist/);
  }, 120_000);
});

for (const kind of STORES) {
  describe(`examples/web-client against a gateway (${kind})`, () => {
    let gw: TestGateway;
    let client: CrmClient;

    beforeAll(async () => {
      gw = await startTestGateway(kind);
      const created = await call(gw, 'POST', TOKENS, { spec: { displayName: 'web client' } });
      expect(created.status).toBe(201);
      client = createCrmClient({ url: gw.url, token: created.body.token, webSocketImpl: WebSocket });
      for (let i = 1; i <= 5; i++) {
        const tags = i % 2 ? ['customer'] : ['lead'];
        expect((await call(gw, 'POST', PEOPLE, { metadata: { name: `c${i}` }, spec: { email: `c${i}@example.net`, company: `Co ${i}`, tags } })).status).toBe(201);
      }
    });
    afterAll(async () => {
      await client?.close();
      await gw?.dispose();
    });

    it('walks the list with a selector, page by page, then follows the changes with the same selector', async () => {
      const { contacts, totalCount, resourceVersion } = await contactsByTag(client.apollo, 'customer', 2);
      expect(totalCount).toBe(3);
      expect(contacts.map((c) => c.spec?.email)).toEqual(['c1@example.net', 'c3@example.net', 'c5@example.net']);
      expect(contacts[0]).toMatchObject({ __typename: 'CrmExampleNetV1Person', spec: { company: 'Co 1', tags: ['customer'] } });

      const events: ContactEvent[] = [];
      const errors: Error[] = [];
      const stop = watchContacts(client.apollo, 'customer', resourceVersion, (e) => events.push(e), (e) => errors.push(e));
      try {
        // Written while the subscription may still be opening: it resumes from the list's
        // resourceVersion, so it misses none of them, and gets none of the list's own objects.
        await call(gw, 'PATCH', `${PEOPLE}/c1`, { spec: { company: 'Co 1 bis' } }, { 'content-type': 'application/merge-patch+json' });
        await call(gw, 'POST', PEOPLE, { metadata: { name: 'c6' }, spec: { email: 'c6@example.net', tags: ['lead'] } });
        await call(gw, 'POST', PEOPLE, { metadata: { name: 'c7' }, spec: { email: 'c7@example.net', tags: ['customer'] } });
        await call(gw, 'DELETE', `${PEOPLE}/c3`);
        await eventually(async () => expect(events.length).toBeGreaterThanOrEqual(3));
        await new Promise((r) => setTimeout(r, 200)); // nothing more comes
        expect(events.map((e) => [e.type, e.object?.metadata?.name])).toEqual([
          ['MODIFIED', 'c1'],
          ['ADDED', 'c7'],
          ['DELETED', 'c3'],
        ]);
        expect(events[0]!.object).toMatchObject({ __typename: 'CrmExampleNetV1Person', spec: { company: 'Co 1 bis' } });
        expect(events.every((e) => e.object?.metadata?.name !== 'c6')).toBe(true);
        expect(errors).toEqual([]);
      } finally {
        stop();
      }
    }, 60_000);
  });
}
