/**
 * Signed-in docs and GraphiQL (issue 34 item 2; docs/API.md §9), in Chromium: a person signed in
 * to the console opens /docs and GraphiQL in the same tab and both load signed in, with the
 * console's token (sessionStorage of this origin) sent as `Authorization: Bearer`, without typing
 * anything and without a browser prompt. A tab without a session gets the pages' own sign-in
 * form, which creates a token as the console does. The pages keep their strict CSP (no
 * violation is reported). On the old code /docs answered 401 with a Basic challenge.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page, Request } from 'playwright-core';
import { ADMIN, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { launchChromium, screenshotFailure, signIn, visible, type Browser } from '../console/browser.js';

const OPERATION = '/apis/people.example.com/v1alpha1/persons/{name}';

describe('/docs and GraphiQL with the console session', () => {
  let gw: TestGateway;
  let browser: Browser;
  beforeAll(async () => {
    gw = await startTestGateway('embedded');
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await gw?.dispose();
  });

  /** Records the Authorization header of every request the page sends to these paths. */
  function recordAuth(page: Page, paths: RegExp): { path: string; authorization: string | undefined }[] {
    const seen: { path: string; authorization: string | undefined }[] = [];
    page.on('request', (r: Request) => {
      const url = new URL(r.url());
      if (paths.test(url.pathname)) seen.push({ path: url.pathname, authorization: r.headers().authorization });
    });
    return seen;
  }

  it('signed in to the console: /docs and GraphiQL load signed in, with the token', { timeout: 120_000 }, async (t) => {
    const page = await browser.page();
    try {
      await signIn(page, gw.url, ADMIN.username, ADMIN.password);
      await visible(page.locator('a[data-route="users"]'));
      const token = await page.evaluate(() => sessionStorage.getItem('svc.console.token'));
      expect(token).toBeTruthy();
      const sent = recordAuth(page, /^\/(openapi|graphql$)/);

      const docs = await page.goto(`${gw.url}/docs`);
      expect(docs?.status()).toBe(200);
      expect(docs?.headers()['www-authenticate']).toBeUndefined();
      await visible(page.getByText(OPERATION));
      expect(await page.locator('form[data-svc="sign-in"]').count()).toBe(0);
      const documents = sent.filter((s) => s.path.startsWith('/openapi'));
      expect(documents.length).toBeGreaterThan(0);
      for (const s of documents) expect(s.authorization, s.path).toBe(`Bearer ${token}`);

      // GraphiQL: its introspection query is sent with the token and answered (anonymous: 401).
      const introspection = page.waitForResponse((r) => r.url() === `${gw.url}/graphql` && r.request().method() === 'POST' && /__schema/.test(r.request().postData() ?? ''));
      const gql = await page.goto(`${gw.url}/graphql`);
      expect(gql?.status()).toBe(200);
      const answered = await introspection;
      expect(answered.status()).toBe(200);
      expect(answered.request().headers().authorization).toBe(`Bearer ${token}`);
      expect(((await answered.json()) as any).data.__schema.queryType.name).toBe('Query');
      await visible(page.locator('.graphiql-container'));
      expect(await page.locator('form[data-svc="sign-in"]').count()).toBe(0);
      expect(page.errors.filter((e) => /Content Security Policy|Refused/i.test(e))).toEqual([]);
    } catch (e) {
      await screenshotFailure(browser, t.task.name);
      throw e;
    } finally {
      await page.close();
    }
  });

  it("the quick start's path: sign in to the console, open a generated model page, then /docs and GraphiQL, typing credentials once", { timeout: 120_000 }, async (t) => {
    const page = await browser.page();
    try {
      // An object to see on the model page (the content plugin's posts have no console route of their own).
      const created = await fetch(`${gw.url}/apis/crm.example.net/v1/people`, {
        method: 'POST',
        headers: { authorization: `Basic ${Buffer.from(`${ADMIN.username}:${ADMIN.password}`).toString('base64')}`, 'content-type': 'application/json' },
        body: JSON.stringify({ metadata: { name: 'quick-start' }, spec: { email: 'quick@start.example', company: 'Quick Start' } }),
      });
      expect(created.status).toBe(201);
      await signIn(page, gw.url, ADMIN.username, ADMIN.password);
      await page.locator('a[data-route="model:crm.example.net/v1/people"]').click();
      await visible(page.locator('[data-object-name="quick-start"]'));
      const sent = recordAuth(page, /^\/(openapi|graphql$)/);
      const token = await page.evaluate(() => sessionStorage.getItem('svc.console.token'));
      expect(token).toBeTruthy();
      // The landing page links both; the person follows them in the same tab.
      await page.goto(`${gw.url}/docs`);
      await visible(page.getByText(OPERATION));
      expect(await page.locator('form[data-svc="sign-in"]').count()).toBe(0);
      const introspection = page.waitForResponse((r) => r.url() === `${gw.url}/graphql` && r.request().method() === 'POST' && /__schema/.test(r.request().postData() ?? ''));
      await page.goto(`${gw.url}/graphql`);
      const answered = await introspection;
      expect(answered.status()).toBe(200);
      expect(answered.request().headers().authorization).toBe(`Bearer ${token}`);
      await visible(page.locator('.graphiql-container'));
      expect(await page.locator('form[data-svc="sign-in"]').count()).toBe(0);
      const documents = sent.filter((s) => s.path.startsWith('/openapi'));
      expect(documents.length).toBeGreaterThan(0);
      for (const s of documents) expect(s.authorization, s.path).toBe(`Bearer ${token}`);
    } catch (e) {
      await screenshotFailure(browser, t.task.name);
      throw e;
    } finally {
      await page.close();
    }
  });

  it('without a session, /docs shows a sign-in form that signs in with a token', { timeout: 120_000 }, async (t) => {
    const page = await browser.page();
    try {
      const docs = await page.goto(`${gw.url}/docs`);
      expect(docs?.status()).toBe(200);
      const form = page.locator('form[data-svc="sign-in"]');
      await visible(form);
      await form.locator('input[name=username]').fill(ADMIN.username);
      await form.locator('input[name=password]').fill('wrong-password');
      await form.locator('button[type=submit]').click();
      await visible(page.getByText('Wrong credentials.'));
      await form.locator('input[name=password]').fill(ADMIN.password);
      await form.locator('button[type=submit]').click();
      await visible(page.getByText(OPERATION));
      const token = await page.evaluate(() => sessionStorage.getItem('svc.console.token'));
      expect(token).toMatch(/\S{20,}/);
      // GraphiQL in the same tab is signed in too; another tab (its own sessionStorage) is not.
      await page.goto(`${gw.url}/graphql`);
      await visible(page.locator('.graphiql-container'));
      expect(await page.locator('form[data-svc="sign-in"]').count()).toBe(0);
      const other = await browser.page();
      await other.goto(`${gw.url}/graphql`);
      await visible(other.locator('form[data-svc="sign-in"]'));
      await other.close();
      // Nothing is kept beyond this tab's sessionStorage.
      expect(await page.evaluate(() => Object.keys(localStorage).filter((k) => /token|auth/i.test(k) || /svc\./.test(k)))).toEqual([]);
      expect((await browser.context.cookies()).length).toBe(0);
    } catch (e) {
      await screenshotFailure(browser, t.task.name);
      throw e;
    } finally {
      await page.close();
    }
  });
});
