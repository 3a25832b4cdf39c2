/**
 * Real Chromium for the console tests: Debian's /usr/bin/chromium driven by playwright-core
 * (Playwright's own browser download cannot work on these machines), headless, with a fresh
 * profile directory per launch. A failed test leaves a screenshot in test-results/console/.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Locator, type Page } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const SCREENSHOTS = join(import.meta.dirname, '../../test-results/console');

export interface Browser {
  context: BrowserContext;
  /** A new page (tab) with its own sessionStorage; console errors are collected in `errors`. */
  page(): Promise<Page & { errors: string[] }>;
  close(): Promise<void>;
}

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`Chromium not found at ${CHROMIUM}: apt-get install -y chromium (or set CHROMIUM_PATH)`);
  }
  const profile = await mkdtemp(join(tmpdir(), 'svc-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 860 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  context.setDefaultTimeout(20_000);
  return {
    context,
    async page() {
      const page = (await context.newPage()) as Page & { errors: string[] };
      page.errors = [];
      page.on('pageerror', (e) => page.errors.push(e.message));
      page.on('console', (m) => {
        // Failed API calls are logged by Chromium as "Failed to load resource"; those are expected.
        if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) page.errors.push(m.text());
      });
      return page;
    },
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

/** Saves a screenshot of every open page of a failed test. */
export async function screenshotFailure(browser: Browser | undefined, name: string): Promise<void> {
  if (!browser) return;
  await mkdir(SCREENSHOTS, { recursive: true });
  const safe = name.replace(/[^A-Za-z0-9_-]+/g, '_').slice(0, 120);
  let i = 0;
  for (const p of browser.context.pages()) {
    await p.screenshot({ path: join(SCREENSHOTS, `${safe}-${i++}.png`), fullPage: true }).catch(() => undefined);
  }
}

/** Waits until the locator matches exactly `n` elements. */
export async function count(locator: Locator, n: number, timeout = 20_000): Promise<void> {
  const until = Date.now() + timeout;
  let last = -1;
  while (Date.now() < until) {
    last = await locator.count();
    if (last === n) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`expected ${n} of ${locator}, found ${last}`);
}

export async function visible(locator: Locator): Promise<void> {
  await locator.first().waitFor({ state: 'visible' });
}

/** Opens the console and signs in with a username and password. */
export async function signIn(page: Page, base: string, username: string, password: string): Promise<void> {
  await page.goto(`${base}/console/`);
  await page.fill('input[name=username]', username);
  await page.fill('input[name=password]', password);
  await page.click('button[type=submit]');
}
