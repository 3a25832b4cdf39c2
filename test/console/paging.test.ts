/**
 * The console's object lists in keyset pages (docs/API.md §9, §12), in real Chromium, on both
 * stores: the walk asks `?limit=N`, then `&continue=<the previous page's token>` (never
 * page/size) as the user scrolls; rows arrive in the gateway's order with no duplicate; the page
 * keeps at most 500 rows; a new filter restarts at the first page; the watch started from the
 * first page inserts an object added elsewhere in place and updates or removes shown ones.
 *
 * The embedded store holds 50,000 objects (a person scrolling a large model); they are created
 * in-process through the operations layer (`createObject`, as bench/lib/seed.ts does: what a REST
 * POST stores, without HTTP), which took 10–30 s on a busy two-core machine (group commits: 128 creates in flight). MongoDB (FerretDB) gets 800: the
 * same walk, at a size its test server seeds quickly. Page latency at depth is left to the
 * benches (no timed assertion here); the URLs show that each page is read from its token.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Page, Request } from 'playwright-core';
import { ADMIN, call, STORES, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { createObject } from '../../src/operations/index.js';
import { allowAll, ANONYMOUS } from '../../src/identity/authorizer.js';
import { count, launchChromium, screenshotFailure, signIn, visible, type Browser } from './browser.js';

const PERSONS = '/apis/people.example.com/v1alpha1/persons';
const SHARD = 'people.example.com/shard';
const ROWS = '[data-object-name]';
const MAX_ROWS = 500;

/** Creates `n` persons in-process, `concurrency` at a time, 10 shards by label; returns the seconds it took. */
async function seed(gw: TestGateway, n: number, concurrency: number): Promise<number> {
  const entry = gw.registry.find('people.example.com', 'v1alpha1', 'persons')!;
  const ctx = { caller: ANONYMOUS, authorizer: allowAll };
  const started = Date.now();
  let next = 0;
  const worker = async () => {
    while (next < n) {
      const i = next++;
      await createObject(ctx, entry, {
        metadata: { name: `p-${String(i).padStart(5, '0')}`, labels: { [SHARD]: `s${i % 10}` } },
        spec: { name: `Person ${i}`, age: i % 100 },
      });
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return (Date.now() - started) / 1000;
}

/** The first `n` names of the page-mode (`page`/`size`) list of a query: the order to expect. */
async function pageMode(gw: TestGateway, n: number, query = ''): Promise<string[]> {
  const r = await call(gw, 'GET', `${PERSONS}?page=1&size=${n}${query}`);
  expect(r.status).toBe(200);
  return r.body.items.map((o: any) => o.metadata.name);
}

const shownNames = (page: Page) => page.locator(ROWS).evaluateAll((rows) => rows.map((r) => r.getAttribute('data-object-name')!));

/** List requests of the persons collection (not single objects, not the watch). */
function listRequests(page: Page): { url: URL; token: Promise<string> }[] {
  const seen: { url: URL; token: Promise<string> }[] = [];
  page.on('request', (req: Request) => {
    const url = new URL(req.url());
    if (url.pathname !== PERSONS || req.method() !== 'GET' || url.protocol.startsWith('ws')) return;
    const token = req.response().then(async (res) => ((await res?.json()) as { continue?: string } | undefined)?.continue ?? '');
    seen.push({ url, token });
  });
  return seen;
}

describe.each(STORES)('console lists in keyset pages (%s)', (store) => {
  const size = store === 'embedded' ? 50_000 : 800;
  let gw: TestGateway;
  let browser: Browser;
  beforeAll(async () => {
    [gw, browser] = await Promise.all([startTestGateway(store), launchChromium()]);
    const seconds = await seed(gw, size, store === 'embedded' ? 128 : 8);
    console.log(`seeded ${size} persons on ${store} in ${seconds.toFixed(1)} s`);
  }, 180_000);
  afterEach(async (ctx) => {
    if (ctx.task.result?.state === 'fail') await screenshotFailure(browser, `paging-${store}-${ctx.task.name}`);
    for (const p of browser?.context.pages() ?? []) await p.close();
  });
  afterAll(async () => {
    await browser?.close();
    await gw?.dispose();
  });

  /**
   * Scrolls to the end `pages` times (each scroll must bring exactly one more page) and checks
   * after each that the rows shown are a run of `expected`, without a duplicate; returns every
   * name seen, in order.
   */
  async function scroll(page: Page, requests: unknown[], pages: number, expected: string[]): Promise<string[]> {
    const seen: string[] = [];
    const check = async () => {
      const names = await shownNames(page);
      expect(new Set(names).size).toBe(names.length);
      const at = expected.indexOf(names[0]);
      expect(at).toBeGreaterThanOrEqual(0);
      expect(names).toEqual(expected.slice(at, at + names.length));
      for (const n of names) if (!seen.includes(n)) seen.push(n);
      return names;
    };
    await check();
    for (let i = 0; i < pages; i++) {
      const before = requests.length;
      const last = (await shownNames(page)).at(-1)!;
      await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight));
      // the next page is in when the row after the last one shows
      await visible(page.locator(`[data-object-name="${expected[expected.indexOf(last) + 1]}"]`));
      await page.waitForFunction(() => !document.querySelector('[data-action="load-more"][disabled]'));
      expect(requests.length).toBe(before + 1);
      expect((await check()).length).toBeLessThanOrEqual(MAX_ROWS);
    }
    return seen;
  }

  it('scrolls through the model page by page with limit and continue, in order, at most 500 rows in the page', { timeout: 120_000 }, async () => {
    const expected = await pageMode(gw, 800);
    const page = await browser.page();
    const requests = listRequests(page);
    await signIn(page, gw.url, ADMIN.username, ADMIN.password);
    await page.click('a[data-route="persons"]');
    await count(page.locator(ROWS), 50);
    expect(await shownNames(page)).toEqual(expected.slice(0, 50));
    // 13 more pages: 700 objects read, the earliest 200 dropped from the page
    const seen = await scroll(page, requests, 13, expected);
    expect(seen).toEqual(expected.slice(0, 700));
    await count(page.locator(ROWS), MAX_ROWS);
    await visible(page.locator('[data-field="dropped"]').getByText('200 earlier rows'));
    expect(requests).toHaveLength(14);
    for (const [i, { url }] of requests.entries()) {
      expect(url.searchParams.get('limit')).toBe('50');
      expect(url.searchParams.has('page') || url.searchParams.has('size')).toBe(false);
      expect(url.searchParams.get('continue')).toBe(i === 0 ? null : await requests[i - 1].token);
    }
    // Back to the top: a new walk from the first page
    await page.click('[data-action="back-to-top"]');
    await count(page.locator(ROWS), 50);
    expect(await shownNames(page)).toEqual(expected.slice(0, 50));
    expect(requests.at(-1)!.url.searchParams.has('continue')).toBe(false);
    await count(page.locator('[data-field="dropped"]'), 0);
    expect(page.errors).toEqual([]);
  });

  it('a filter restarts the walk at the first page; its pages keep the selector', { timeout: 120_000 }, async () => {
    const page = await browser.page();
    const requests = listRequests(page);
    await signIn(page, gw.url, ADMIN.username, ADMIN.password);
    await page.click('a[data-route="persons"]');
    await count(page.locator(ROWS), 50);
    await scroll(page, requests, 2, await pageMode(gw, 200));
    const selector = `${SHARD} in (s3,s5)`;
    const expected = await pageMode(gw, 200, `&labelSelector=${encodeURIComponent(selector)}&fieldSelector=spec.name!=x`);
    const before = requests.length;
    await page.fill('input[name=labelSelector]', selector);
    await page.fill('input[name=fieldSelector]', 'spec.name!=x');
    await page.click('[data-action="filter"]');
    await visible(page.locator(`[data-object-name="${expected[0]}"]`));
    await count(page.locator(ROWS), 50);
    expect(await shownNames(page)).toEqual(expected.slice(0, 50));
    const first = requests[before].url;
    expect(first.searchParams.has('continue')).toBe(false);
    const seen = await scroll(page, requests, 2, expected);
    expect(seen).toEqual(expected.slice(0, 150));
    for (const { url } of requests.slice(before)) {
      expect(url.searchParams.get('labelSelector')).toBe(selector);
      expect(url.searchParams.get('fieldSelector')).toBe('spec.name!=x');
      expect(url.searchParams.get('limit')).toBe('50');
    }
    expect(page.errors).toEqual([]);
  });

  it('stays live: an object added elsewhere is inserted at its place, shown ones change in place, others wait for their page', { timeout: 120_000 }, async () => {
    const selector = `${SHARD}!=s4`;
    const expected = await pageMode(gw, 100, `&labelSelector=${encodeURIComponent(selector)}`);
    const page = await browser.page();
    const requests = listRequests(page);
    await signIn(page, gw.url, ADMIN.username, ADMIN.password);
    await page.click('a[data-route="persons"]');
    await page.fill('input[name=labelSelector]', selector);
    await page.click('[data-action="filter"]');
    await visible(page.locator(`[data-object-name="${expected[0]}"]`));
    await scroll(page, requests, 1, expected);
    await count(page.locator(ROWS), 100);
    const listed = requests.length;
    await page.waitForTimeout(300); // the watch is open

    // Newest first (the default order): an added match goes to the top; another shard does not show.
    expect((await call(gw, 'POST', PERSONS, { metadata: { name: 'live-new', labels: { [SHARD]: 's7' } }, spec: { name: 'Live' } })).status).toBe(201);
    expect((await call(gw, 'POST', PERSONS, { metadata: { name: 'live-other', labels: { [SHARD]: 's4' } }, spec: { name: 'Other' } })).status).toBe(201);
    // A shown object changes in place; one past the loaded end (a later page) stays unshown.
    const far = (await pageMode(gw, 1000, `&labelSelector=${encodeURIComponent(selector)}`)).at(-1)!;
    expect(await page.locator(`[data-object-name="${far}"]`).count()).toBe(0);
    expect((await call(gw, 'PATCH', `${PERSONS}/${far}`, { spec: { name: 'Far changed' } }, { 'content-type': 'application/merge-patch+json' })).status).toBe(200);
    expect((await call(gw, 'PATCH', `${PERSONS}/${expected[10]}`, { spec: { name: 'Changed' } }, { 'content-type': 'application/merge-patch+json' })).status).toBe(200);
    expect((await call(gw, 'DELETE', `${PERSONS}/${expected[20]}`)).status).toBe(200);
    await count(page.locator(`[data-object-name="${expected[20]}"]`), 0);
    await visible(page.locator(`[data-object-name="${expected[10]}"]`).getByText('name: Changed'));
    const names = await shownNames(page);
    expect(names[0]).toBe('live-new');
    expect(names.slice(1)).toEqual(expected.slice(0, 100).filter((n) => n !== expected[20]));
    expect(names).not.toContain('live-other');
    expect(names).not.toContain(far);
    // all of it from the watch: no list was read again
    expect(requests).toHaveLength(listed);
    expect(page.errors).toEqual([]);
  });
});
