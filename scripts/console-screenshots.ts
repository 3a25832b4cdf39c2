/**
 * Regenerates the README's console screenshots (docs/screenshots/console-*.png): starts a
 * gateway on a throw-away embedded store with the sample plugins, adds a few objects, and
 * photographs each main page in Chromium.  npx tsx scripts/console-screenshots.ts
 */
import { mkdtemp, mkdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { startGateway } from '../src/server.js';

const root = join(import.meta.dirname, '..');
const out = join(root, 'docs/screenshots');
const dataDir = await mkdtemp(join(tmpdir(), 'svc-shots-'));
const password = 'screenshot-admin-password';
const gw = await startGateway({
  port: 0,
  host: '127.0.0.1',
  dataDir,
  pluginsDir: join(root, 'plugins'),
  adminUsername: 'admin',
  adminPassword: password,
  logLevel: 'silent',
});
const auth = `Basic ${Buffer.from(`admin:${password}`).toString('base64')}`;
const post = (path: string, body: unknown) =>
  fetch(gw.url + path, { method: 'POST', headers: { authorization: auth, 'content-type': 'application/json' }, body: JSON.stringify(body) });

const people: [string, string, number, string][] = [
  ['ada', 'Ada Lovelace', 36, 'FEMALE'],
  ['alan', 'Alan Turing', 41, 'MALE'],
  ['grace', 'Grace Hopper', 85, 'FEMALE'],
  ['edsger', 'Edsger Dijkstra', 72, 'MALE'],
];
for (const [name, full, age, gender] of people) {
  await post('/apis/people.example.com/v1alpha1/persons', { metadata: { name, labels: { 'people.example.com/team': age > 60 ? 'blue' : 'red' } }, spec: { name: full, age, gender } });
}
for (const [name, role] of [['carol', 'people-manage-persons'], ['dave', 'system-users-view']]) {
  await post('/api/v1alpha1/users', { metadata: { name }, spec: { displayName: name[0]!.toUpperCase() + name.slice(1), email: `${name}@example.com`, password: `${name}-password-123` } });
  await post('/api/v1alpha1/rolebindings', { metadata: { name: `${name}-${role}` }, roleRef: { apiGroup: '', kind: 'Role', name: role }, subjects: [{ apiGroup: '', kind: 'User', name }] });
}

const profile = await mkdtemp(join(tmpdir(), 'svc-shots-chromium-'));
const browser = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
  headless: true,
  viewport: { width: 1200, height: 640 },
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
try {
  await mkdir(out, { recursive: true });
  const page = await browser.newPage();
  await page.goto(`${gw.url}/console/`);
  await page.fill('input[name=username]', 'admin');
  await page.screenshot({ path: join(out, 'console-sign-in.png') });
  await page.fill('input[name=password]', password);
  await page.click('button[type=submit]');
  await page.waitForSelector('a[data-route=users]');
  for (const route of ['users', 'roles', 'plugins', 'persons']) {
    await page.click(`a[data-route=${route}]`);
    await page.waitForSelector(`[data-page=${route}] [data-object-name]`);
    if (route === 'persons') {
      await page.click('[data-action=create]');
      await page.fill('[name="metadata.name"]', 'barbara');
      await page.fill('[name="spec.name"]', 'Barbara Liskov');
      await page.fill('[name="spec.age"]', '250');
      await page.click('[data-action=save]');
      await page.waitForSelector('[aria-invalid=true]');
    }
    await page.screenshot({ path: join(out, `console-${route}.png`) });
  }
  console.log(`screenshots written to ${out}`);
} finally {
  await browser.close();
  await gw.close();
  await rm(profile, { recursive: true, force: true });
  await rm(dataDir, { recursive: true, force: true });
}
