/**
 * The console at /console/ in real Chromium (docs/API.md §9), on both stores: sign-in (password,
 * token, wrong credentials), the menu and the permission wrapper for users with different roles,
 * the route guard, the form generated from a model's JSON Schema (with a 422), the live list,
 * the roles, users and plugins pages, and the generated page of every model the user may list
 * (`model:<group>/<version>/<plural>`, buttons from the user's rights on the model). Also the
 * console's files (public, strict CSP).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it as vitestIt } from 'vitest';
import { ADMIN, ANONYMOUSLY, basicAuth, call, STORES, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { count, launchChromium, screenshotFailure, signIn, visible, type Browser } from './browser.js';

/** A browser test may wait on a busy machine (the whole suite shares two cores): 90 s each. */
const it = (name: string, fn: () => Promise<void>) => vitestIt(name, fn, 90_000);

const PERSONS = '/apis/people.example.com/v1alpha1/persons';
const TOKENS = '/apis/uc.api.security.svc.run/v1alpha1/personalaccesstokens';
const ROUTES = '/apis/api.console.svc.run/v1alpha1/routes';
const POSTS = '/apis/content.svc.run/v1alpha1/posts';
const CRM_PEOPLE = '/apis/crm.example.net/v1/people';
/** Menu entries of the built-in and plugin routes (each listable model has a `model:` entry too). */
const ROUTE_ENTRIES = 'a[data-route]:not([data-route^="model:"])';
const MODEL = {
  posts: 'model:content.svc.run/v1alpha1/posts',
  crm: 'model:crm.example.net/v1/people',
  persons: 'model:people.example.com/v1alpha1/persons',
  users: 'model:/v1alpha1/users',
  roles: 'model:/v1alpha1/roles',
};

const USERS = {
  viewer: { password: 'viewer-pass-1234', role: 'people-view-persons' },
  manager: { password: 'manager-pass-1234', role: 'people-manage-persons' },
  auditor: { password: 'auditor-pass-1234', role: 'system-users-view' },
  // Model rights without any UI permission: reading posts; writing CRM people; only `get` on them.
  editor: { password: 'editor-pass-1234', role: 'content-view-posts' },
  crmwriter: { password: 'crmwriter-pass-1234', role: 'crm-people-write' },
  crmgetter: { password: 'crmgetter-pass-1234', role: 'crm-people-get' },
} as const;

const CRM_ROLES = [
  { metadata: { name: 'crm-people-write' }, rules: [{ apiGroups: ['crm.example.net'], resources: ['people'], verbs: ['get', 'list', 'watch', 'create'] }] },
  { metadata: { name: 'crm-people-get' }, rules: [{ apiGroups: ['crm.example.net'], resources: ['people'], verbs: ['get'] }] },
];

async function createUser(gw: TestGateway, name: string, password: string, role?: string): Promise<void> {
  const u = await call(gw, 'POST', '/api/v1alpha1/users', { metadata: { name }, spec: { displayName: name, email: `${name}@example.test`, password } });
  expect(u.status).toBe(201);
  if (!role) return;
  const b = await call(gw, 'POST', '/api/v1alpha1/rolebindings', {
    metadata: { name: `${name}-${role}` },
    roleRef: { apiGroup: '', kind: 'Role', name: role },
    subjects: [{ apiGroup: '', kind: 'User', name }],
  });
  expect(b.status).toBe(201);
}

describe('console files', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway('embedded');
  });
  afterAll(() => gw?.dispose());

  it('are public, with a strict CSP and nosniff; the page has no inline script', async () => {
    for (const path of ['/console/', '/console/users', '/console/assets/app.js', '/console/assets/style.css', '/console/vendor/preact.js', '/console/vendor/hooks.js', '/console/vendor/htm.js']) {
      const res = await call(gw, 'GET', path, undefined, ANONYMOUSLY);
      expect(res.status, path).toBe(200);
      const csp = res.headers.get('content-security-policy')!;
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("default-src 'none'");
      expect(csp).not.toContain('unsafe-inline');
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    }
    const page = await call(gw, 'GET', '/console/', undefined, ANONYMOUSLY);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.body).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect((await call(gw, 'GET', '/console/vendor/hooks.js', undefined, ANONYMOUSLY)).body).not.toMatch(/from\s*["']preact["']/);
    const js = await call(gw, 'GET', '/console/assets/app.js', undefined, ANONYMOUSLY);
    expect(js.headers.get('content-type')).toMatch(/^text\/javascript/);
    const redirect = await fetch(`${gw.url}/console`, { redirect: 'manual' });
    expect(redirect.status).toBe(301);
    expect(redirect.headers.get('location')).toBe('/console/');
    expect((await call(gw, 'GET', '/console/assets/nothing.js', undefined, ANONYMOUSLY)).status).toBe(404);
    expect((await call(gw, 'GET', '/console/assets/..%2Fpackage.json', undefined, ANONYMOUSLY)).status).toBe(404);
    expect((await call(gw, 'POST', '/console/', '{}', ANONYMOUSLY)).status).toBe(405);
    const param = await call(gw, 'GET', '/console/?lang=en', undefined, ANONYMOUSLY);
    expect(param.status).toBe(400);
    expect(param.body.detail).toContain('lang');
  });

  it('lists plugin routes to callers who may list their model, or (without the schema) who hold their UI permissions', async () => {
    const admin = await call(gw, 'GET', ROUTES);
    expect(admin.status).toBe(200);
    expect(admin.body.items).toEqual([
      expect.objectContaining({ plugin: 'people', name: 'persons', resource: 'persons', group: 'people.example.com', kind: 'Person', managePermissions: ['plugin:people:manage'] }),
    ]);
    expect(admin.body.items[0].schema.$defs.PersonSpec.properties.age.type).toBe('integer');
    await createUser(gw, 'nobody', 'nobody-pass-1234');
    const none = await call(gw, 'GET', ROUTES, undefined, { authorization: basicAuth('nobody', 'nobody-pass-1234') });
    expect(none.body.items).toEqual([]);
    // Holding the route's UI permissions without the right to list the model: listed for the menu, no schema.
    await call(gw, 'POST', '/api/v1alpha1/roles', {
      metadata: { name: 'people-menu-only', annotations: { 'rbac.authorization.svc.run/ui-permissions': '["plugin:people:view"]' } },
      rules: [],
    });
    await createUser(gw, 'menuonly', 'menuonly-pass-1234', 'people-menu-only');
    const menu = await call(gw, 'GET', ROUTES, undefined, { authorization: basicAuth('menuonly', 'menuonly-pass-1234') });
    expect(menu.body.items).toEqual([expect.objectContaining({ name: 'persons', schema: null })]);
    expect((await call(gw, 'GET', ROUTES, undefined, ANONYMOUSLY)).status).toBe(401);
  });
});

describe.each(STORES)('console in Chromium (%s)', (store) => {
  let gw: TestGateway;
  let browser: Browser;
  beforeAll(async () => {
    [gw, browser] = await Promise.all([startTestGateway(store), launchChromium()]);
    for (const role of CRM_ROLES) expect((await call(gw, 'POST', '/api/v1alpha1/roles', role)).status).toBe(201);
    for (const [name, u] of Object.entries(USERS)) await createUser(gw, name, u.password, u.role);
  });
  afterEach(async (ctx) => {
    if (ctx.task.result?.state === 'fail') await screenshotFailure(browser, `${store}-${ctx.task.name}`);
    for (const p of browser?.context.pages() ?? []) await p.close();
  });
  afterAll(async () => {
    await browser?.close();
    await gw?.dispose();
  });

  it('signs in with a password, keeps only a token in sessionStorage, and shows the full menu to the administrator', async () => {
    const page = await browser.page();
    await signIn(page, gw.url, ADMIN.username, ADMIN.password);
    await visible(page.locator('a[data-route="users"]'));
    for (const r of ['users', 'roles', 'plugins', 'persons']) await count(page.locator(`a[data-route="${r}"]`), 1);
    await count(page.locator(ROUTE_ENTRIES), 4);
    const stored = await page.evaluate(() => ({ session: JSON.stringify({ ...sessionStorage }), local: localStorage.length }));
    expect(stored.session).not.toContain(ADMIN.password);
    expect(stored.session).toMatch(/svcpat_|"svc\.console\.token"/);
    expect(stored.local).toBe(0);
    expect(page.errors).toEqual([]);
  });

  it('refuses wrong credentials with a visible alert and no menu', async () => {
    const page = await browser.page();
    await signIn(page, gw.url, ADMIN.username, 'wrong-password-here');
    await visible(page.locator('[role=alert]'));
    expect(await page.locator('[role=alert]').innerText()).toMatch(/wrong/i);
    await count(page.locator('a[data-route]'), 0);
    await page.fill('input[name=token]', 'svcpat_not-a-real-token');
    await page.click('button[type=submit]');
    await visible(page.getByText(/token is not valid/));
    await count(page.locator('a[data-route]'), 0);
  });

  it('signs in with a personal access token', async () => {
    const created = await call(gw, 'POST', TOKENS, { spec: { displayName: 'console token test' } }, { authorization: basicAuth('viewer', USERS.viewer.password) });
    expect(created.status).toBe(201);
    const page = await browser.page();
    await page.goto(`${gw.url}/console/`);
    await page.fill('input[name=token]', created.body.token);
    await page.click('button[type=submit]');
    await visible(page.locator('a[data-route="persons"]'));
    await count(page.locator(ROUTE_ENTRIES), 1);
  });

  it('shows each user the menu entries and controls their UI permissions allow; the guard refuses the rest', async () => {
    const viewer = await browser.page();
    await signIn(viewer, gw.url, 'viewer', USERS.viewer.password);
    await visible(viewer.locator('a[data-route="persons"]'));
    await count(viewer.locator(ROUTE_ENTRIES), 1);
    await viewer.click('a[data-route="persons"]');
    await visible(viewer.locator('[data-page="persons"]'));
    await count(viewer.locator('[data-action="create"]'), 0);
    // Direct navigation to a route the user may not open: the guard shows the refusal, not the page.
    await viewer.goto(`${gw.url}/console/users`);
    await visible(viewer.locator('[data-page="forbidden"] [role=alert]'));
    await count(viewer.locator('[data-page="users"]'), 0);
    await viewer.goto(`${gw.url}/console/#/plugins`);
    await visible(viewer.locator('[data-page="forbidden"] [role=alert]'));
    await count(viewer.locator('[data-page="plugins"]'), 0);

    const manager = await browser.page();
    await signIn(manager, gw.url, 'manager', USERS.manager.password);
    await manager.click('a[data-route="persons"]');
    await visible(manager.locator('[data-action="create"]'));

    const auditor = await browser.page();
    await signIn(auditor, gw.url, 'auditor', USERS.auditor.password);
    await visible(auditor.locator('a[data-route="users"]'));
    await count(auditor.locator(ROUTE_ENTRIES), 1);
    await auditor.click('a[data-route="users"]');
    await visible(auditor.locator('[data-object-name="viewer"]'));
    await count(auditor.locator('[data-action="create"]'), 0);
    await count(auditor.locator('[data-action="assign-roles"]'), 0);
    // The wrapper is one global custom element, usable anywhere without an import.
    const wrapper = await auditor.evaluate(() => {
      const el = document.createElement('svc-permission');
      el.setAttribute('permissions', '["system:users:manage"]');
      el.innerHTML = '<button id="probe">x</button>';
      document.body.append(el);
      const hidden = (document.getElementById('probe') as HTMLElement).offsetParent === null;
      el.setAttribute('permissions', '["system:users:view"]');
      const shown = (document.getElementById('probe') as HTMLElement).offsetParent !== null;
      return { defined: !!customElements.get('svc-permission'), hidden, shown };
    });
    expect(wrapper).toEqual({ defined: true, hidden: true, shown: true });
    for (const p of [viewer, manager, auditor]) expect(p.errors).toEqual([]);
  });

  it('creates, edits and deletes through the form generated from the JSON Schema, showing a 422 at its field', async () => {
    const page = await browser.page();
    await signIn(page, gw.url, 'manager', USERS.manager.password);
    await page.click('a[data-route="persons"]');
    await page.click('[data-action="create"]');
    for (const f of ['metadata.name', 'spec.name', 'spec.age', 'spec.gender']) await count(page.locator(`[name="${f}"]`), 1);
    await page.fill('[name="metadata.name"]', 'form-ada');
    await page.fill('[name="spec.name"]', 'Ada Lovelace');
    await page.fill('[name="spec.age"]', '200');
    await page.selectOption('[name="spec.gender"]', 'FEMALE');
    await page.click('[data-action="save"]');
    await visible(page.locator('[name="spec.age"][aria-invalid="true"]'));
    await visible(page.locator('form [role=alert]'));
    expect(await page.locator('form.panel').innerText()).toMatch(/150/);
    await count(page.locator('[name="spec.name"][aria-invalid="true"]'), 0);
    expect((await call(gw, 'GET', `${PERSONS}/form-ada`)).status).toBe(404);

    await page.fill('[name="spec.age"]', '36');
    await page.click('[data-action="save"]');
    await visible(page.locator('[data-object-name="form-ada"]'));
    const stored = await call(gw, 'GET', `${PERSONS}/form-ada`);
    expect(stored.body.spec).toEqual({ name: 'Ada Lovelace', age: 36, gender: 'FEMALE' });

    await page.click('[data-object-name="form-ada"] [data-action="edit"]');
    await page.fill('[name="spec.age"]', '37');
    await page.click('[data-action="save"]');
    await visible(page.locator('[data-object-name="form-ada"]').getByText('age: 37'));
    expect((await call(gw, 'GET', `${PERSONS}/form-ada`)).body.spec.age).toBe(37);

    await page.click('[data-object-name="form-ada"] [data-action="delete"]');
    await count(page.locator('[data-object-name="form-ada"]'), 0);
    expect((await call(gw, 'GET', `${PERSONS}/form-ada`)).status).toBe(404);
    expect(page.errors).toEqual([]);
  });

  it('updates the list live from a watch, honouring the label selector', async () => {
    const page = await browser.page();
    await signIn(page, gw.url, 'viewer', USERS.viewer.password);
    await page.click('a[data-route="persons"]');
    await visible(page.locator('[data-page="persons"]'));
    await page.waitForTimeout(300);
    await call(gw, 'POST', PERSONS, { metadata: { name: 'live-one', labels: { 'people.example.com/team': 'red' } }, spec: { name: 'Live One' } });
    await visible(page.locator('[data-object-name="live-one"]'));

    await page.fill('input[name=labelSelector]', 'people.example.com/team=blue');
    await page.click('[data-action="filter"]');
    await count(page.locator('[data-object-name="live-one"]'), 0);
    await page.waitForTimeout(300);
    await call(gw, 'POST', PERSONS, { metadata: { name: 'live-blue', labels: { 'people.example.com/team': 'blue' } }, spec: { name: 'Blue' } });
    await call(gw, 'POST', PERSONS, { metadata: { name: 'live-red', labels: { 'people.example.com/team': 'red' } }, spec: { name: 'Red' } });
    await visible(page.locator('[data-object-name="live-blue"]'));
    await count(page.locator('[data-object-name="live-red"]'), 0);
    await call(gw, 'DELETE', `${PERSONS}/live-blue`);
    await count(page.locator('[data-object-name="live-blue"]'), 0);
    expect(page.errors).toEqual([]);
  });

  // Scrolling through keyset pages of a large model: test/console/paging.test.ts.
  it('loads the next page of a list with "Load more" (no IntersectionObserver) and filters it', async () => {
    for (let i = 0; i < 55; i++) await call(gw, 'POST', PERSONS, { metadata: { name: `page-${String(i).padStart(2, '0')}`, labels: { 'people.example.com/batch': 'paging' } }, spec: { name: `P${i}` } });
    const page = await browser.page();
    // Without an observer, scrolling loads nothing: the button is the way on.
    await page.addInitScript(() => delete (window as { IntersectionObserver?: unknown }).IntersectionObserver);
    await signIn(page, gw.url, ADMIN.username, ADMIN.password);
    await page.click('a[data-route="persons"]');
    await page.fill('input[name=labelSelector]', 'people.example.com/batch=paging');
    await page.click('[data-action="filter"]');
    await count(page.locator('[data-object-name^="page-"]'), 50);
    await count(page.locator('[data-field="end"]'), 0);
    await page.click('[data-action="load-more"]');
    await count(page.locator('[data-object-name^="page-"]'), 55);
    await visible(page.locator('[data-field="end"]'));
    await count(page.locator('[data-action="load-more"]'), 0);
    await page.fill('input[name=fieldSelector]', 'spec.name=P3');
    await page.click('[data-action="filter"]');
    await count(page.locator('[data-object-name^="page-"]'), 1);
    await visible(page.locator('[data-object-name="page-03"]'));
  });

  it('roles page: templates grouped by module and shown by display name with dependencies; hidden roles not listed', async () => {
    await call(gw, 'POST', '/api/v1alpha1/roles', {
      metadata: { name: 'secret-template', labels: { 'svc.run/role-template': 'true', 'svc.run/hidden': 'true' }, annotations: { 'rbac.authorization.svc.run/module': 'People' } },
      rules: [],
    });
    const page = await browser.page();
    await signIn(page, gw.url, ADMIN.username, ADMIN.password);
    await page.click('a[data-route="roles"]');
    const people = page.locator('[data-module="People"]');
    await visible(people);
    await visible(people.locator('[data-object-name="people-view-persons"]').getByText('View persons'));
    await visible(people.locator('[data-object-name="people-manage-persons"] [data-field="dependencies"]').getByText('View persons'));
    await visible(page.locator('[data-module="Users"] [data-object-name="system-users-manage"]').getByText('Manage users'));
    for (const hidden of ['anonymous', 'authenticated', 'secret-template']) await count(page.locator(`[data-object-name="${hidden}"]`), 0);
    await count(page.getByText('Anonymous', { exact: true }), 0);
  });

  it('users page: creates a user with roles and assigns more, written as RoleBindings', async () => {
    const page = await browser.page();
    await signIn(page, gw.url, ADMIN.username, ADMIN.password);
    await page.click('a[data-route="users"]');
    await page.click('[data-action="create"]');
    await page.fill('[name="metadata.name"]', 'newbie');
    await page.fill('[name="spec.displayName"]', 'New Bie');
    await page.fill('[name="spec.email"]', 'newbie@example.test');
    await page.fill('[name="spec.password"]', 'newbie-pass-1234');
    await page.check('input[type=checkbox][value="people-view-persons"]');
    await page.click('[data-action="save"]');
    await visible(page.locator('[data-object-name="newbie"]'));
    const bindings = async () =>
      (await call(gw, 'GET', '/api/v1alpha1/rolebindings')).body.items
        .filter((b: any) => b.subjects.some((s: any) => s.name === 'newbie'))
        .map((b: any) => b.roleRef.name)
        .sort();
    expect(await bindings()).toEqual(['people-view-persons']);
    const user = await call(gw, 'GET', '/api/v1alpha1/users/newbie');
    expect(user.body.spec).toMatchObject({ displayName: 'New Bie', email: 'newbie@example.test' });

    await page.click('[data-object-name="newbie"] [data-action="assign-roles"]');
    await page.check('[data-object-name="newbie"] input[type=checkbox][value="system-roles-view"]');
    await page.uncheck('[data-object-name="newbie"] input[type=checkbox][value="people-view-persons"]');
    await page.click('[data-object-name="newbie"] [data-action="save"]');
    await visible(page.locator('[data-object-name="newbie"] [data-field="roles"]').getByText('View roles'));
    expect(await bindings()).toEqual(['system-roles-view']);

    // The new user signs in and sees what the assigned role allows.
    const newbie = await browser.page();
    await signIn(newbie, gw.url, 'newbie', 'newbie-pass-1234');
    await visible(newbie.locator('a[data-route="roles"]'));
    await count(newbie.locator(ROUTE_ENTRIES), 1);
  });

  it('plugins page: phase and enable/disable by merge patch, updated live', async () => {
    const page = await browser.page();
    await signIn(page, gw.url, ADMIN.username, ADMIN.password);
    await page.click('a[data-route="plugins"]');
    const crm = page.locator('[data-object-name="crm"]');
    await visible(crm.locator('[data-field="phase"]').getByText('STARTED'));
    await crm.locator('[data-action="disable"]').click();
    await visible(crm.locator('[data-field="phase"]').getByText('STOPPED'));
    expect((await call(gw, 'GET', '/apis/plugin.svc.run/v1alpha1/plugins/crm')).body.spec.enabled).toBe(false);
    await crm.locator('[data-action="enable"]').click();
    await visible(crm.locator('[data-field="phase"]').getByText('STARTED'));
    // A change made elsewhere shows up without a reload.
    await call(gw, 'PATCH', '/apis/plugin.svc.run/v1alpha1/plugins/crm', { spec: { enabled: false } }, { 'content-type': 'application/merge-patch+json' });
    await visible(crm.locator('[data-field="phase"]').getByText('STOPPED'));
    await call(gw, 'PATCH', '/apis/plugin.svc.run/v1alpha1/plugins/crm', { spec: { enabled: true } }, { 'content-type': 'application/merge-patch+json' });
    await visible(crm.locator('[data-field="phase"]').getByText('STARTED'));
  });

  it('gives every model the administrator may list a generated page: form from the schema, a 422 at its field, live rows', async () => {
    const page = await browser.page();
    await signIn(page, gw.url, ADMIN.username, ADMIN.password);
    await visible(page.locator(`a[data-route="${MODEL.posts}"]`));
    for (const m of Object.values(MODEL)) await count(page.locator(`a[data-route="${m}"]`), 1);

    // The content plugin's posts (no console route of its own): create through the generated form.
    await page.click(`a[data-route="${MODEL.posts}"]`);
    await visible(page.locator(`[data-page="${MODEL.posts}"]`));
    expect(page.url()).toBe(`${gw.url}/console/${MODEL.posts}`);
    await page.click('[data-action="create"]');
    for (const f of ['metadata.name', 'spec.title', 'spec.slug', 'spec.tags', 'spec.published']) await count(page.locator(`[name="${f}"]`), 1);
    await page.fill('[name="metadata.name"]', 'gen-post');
    await page.fill('[name="spec.title"]', 'Generated');
    await page.fill('[name="spec.slug"]', 'Not A Slug');
    await page.fill('[name="spec.tags"]', 'a, b');
    await page.click('[data-action="save"]');
    await visible(page.locator('[name="spec.slug"][aria-invalid="true"]'));
    await visible(page.locator('form [role=alert]'));
    await count(page.locator('[name="spec.title"][aria-invalid="true"]'), 0);
    expect((await call(gw, 'GET', `${POSTS}/gen-post`)).status).toBe(404);
    await page.fill('[name="spec.slug"]', 'generated');
    await page.click('[data-action="save"]');
    await visible(page.locator('[data-object-name="gen-post"]'));
    expect((await call(gw, 'GET', `${POSTS}/gen-post`)).body.spec).toMatchObject({ title: 'Generated', slug: 'generated', tags: ['a', 'b'] });
    // An object created elsewhere appears without a reload.
    expect((await call(gw, 'POST', POSTS, { metadata: { name: 'rest-post' }, spec: { title: 'From REST', slug: 'from-rest' } })).status).toBe(201);
    await visible(page.locator('[data-object-name="rest-post"]'));

    // The CRM plugin's people: reached by URL too, live, with their schema's fields.
    await page.goto(`${gw.url}/console/${MODEL.crm}`);
    await visible(page.locator(`[data-page="${MODEL.crm}"]`));
    await page.waitForTimeout(300);
    expect((await call(gw, 'POST', CRM_PEOPLE, { metadata: { name: 'rest-contact' }, spec: { email: 'contact@example.test' } })).status).toBe(201);
    await visible(page.locator('[data-object-name="rest-contact"]'));
    await page.click('[data-action="create"]');
    for (const f of ['spec.email', 'spec.company', 'spec.tags']) await count(page.locator(`[name="${f}"]`), 1);
    await page.fill('[name="metadata.name"]', 'form-contact');
    await page.fill('[name="spec.email"]', `${'x'.repeat(250)}@example.test`);
    await page.click('[data-action="save"]');
    await visible(page.locator('[name="spec.email"][aria-invalid="true"]'));
    expect(await page.locator('form.panel').innerText()).toMatch(/254/);
    await page.fill('[name="spec.email"]', 'form@example.test');
    await page.click('[data-action="save"]');
    await visible(page.locator('[data-object-name="form-contact"]'));

    // A platform kind: roles have top-level rules, not a spec.
    await page.click(`a[data-route="${MODEL.roles}"]`);
    await visible(page.locator(`[data-page="${MODEL.roles}"] [data-object-name="crm-people-get"]`));
    await page.click('[data-action="create"]');
    await count(page.locator('[name="rules"]'), 1);
    expect(page.errors).toEqual([]);
  });

  it('shows a reference (x-svc-ref) as a link that opens the named object', async () => {
    const DEALS = '/apis/crm.example.net/v1/deals';
    const dealsPage = 'model:crm.example.net/v1/deals';
    expect((await call(gw, 'POST', CRM_PEOPLE, { metadata: { name: 'ref-ada' }, spec: { email: 'ada@example.test' } })).status).toBe(201);
    expect((await call(gw, 'POST', CRM_PEOPLE, { metadata: { name: 'ref-bob' }, spec: { email: 'bob@example.test' } })).status).toBe(201);
    const deal = { metadata: { name: 'ref-deal' }, spec: { title: 'Linked', contact: 'ref-ada', watchers: ['ref-bob', 'ref-ada'] } };
    expect((await call(gw, 'POST', DEALS, deal)).status).toBe(201);
    const page = await browser.page();
    await signIn(page, gw.url, ADMIN.username, ADMIN.password);
    await page.click(`a[data-route="${dealsPage}"]`);
    const row = page.locator('[data-object-name="ref-deal"]');
    await visible(row);
    const contact = row.locator('a[data-ref="spec.contact"]');
    await visible(contact);
    expect(await contact.innerText()).toBe('ref-ada');
    expect(await contact.getAttribute('href')).toBe(`/console/${MODEL.crm}?name=ref-ada`);
    // An array of references: one link per name, in order.
    expect(await row.locator('a[data-ref="spec.watchers"]').allInnerTexts()).toEqual(['ref-bob', 'ref-ada']);
    await contact.click();
    await visible(page.locator(`[data-page="${MODEL.crm}"] [data-object-name="ref-ada"]`));
    expect(page.url()).toBe(`${gw.url}/console/${MODEL.crm}?name=ref-ada`);
    await count(page.locator(`[data-page="${MODEL.crm}"] [data-object-name]`), 1);
    expect(await page.locator('[name="fieldSelector"]').inputValue()).toBe('metadata.name=ref-ada');
    expect(page.errors).toEqual([]);
  });

  it('shows a model page to users who may list the model, with the create button only for those who may create it', async () => {
    expect((await call(gw, 'POST', POSTS, { metadata: { name: 'editor-sees' }, spec: { title: 'Seen', slug: 'seen' } })).status).toBe(201);
    // May list posts, not create them: the page and its rows, no create, edit or delete.
    const editor = await browser.page();
    await signIn(editor, gw.url, 'editor', USERS.editor.password);
    await visible(editor.locator(`a[data-route="${MODEL.posts}"]`));
    await count(editor.locator('a[data-route^="model:"]'), 1);
    await editor.click(`a[data-route="${MODEL.posts}"]`);
    await visible(editor.locator('[data-object-name="editor-sees"]'));
    await count(editor.locator('[data-action="create"]'), 0);
    await count(editor.locator('[data-action="edit"], [data-action="delete"]'), 0);

    // May `get` CRM people but not list them: discovery shows the model, the console does not.
    const getter = { authorization: basicAuth('crmgetter', USERS.crmgetter.password) };
    expect((await call(gw, 'GET', '/apis/crm.example.net/v1', undefined, getter)).status).toBe(200);
    const crmgetter = await browser.page();
    await signIn(crmgetter, gw.url, 'crmgetter', USERS.crmgetter.password);
    await visible(crmgetter.locator('[data-page="home"]'));
    await count(crmgetter.locator('a[data-route]'), 0);
    await crmgetter.goto(`${gw.url}/console/${MODEL.crm}`);
    await visible(crmgetter.locator('[data-page="not-found"]'));

    // May create CRM people, with no UI permission at all: the create button and a working form.
    const writer = { authorization: basicAuth('crmwriter', USERS.crmwriter.password) };
    expect((await call(gw, 'GET', '/apis/api.console.svc.run/v1alpha1/users/-/permissions', undefined, writer)).body.uiPermissions).toEqual([]);
    const crmwriter = await browser.page();
    await signIn(crmwriter, gw.url, 'crmwriter', USERS.crmwriter.password);
    await visible(crmwriter.locator(`a[data-route="${MODEL.crm}"]`));
    await count(crmwriter.locator('a[data-route]'), 1);
    await crmwriter.click(`a[data-route="${MODEL.crm}"]`);
    await crmwriter.click('[data-action="create"]');
    await crmwriter.fill('[name="metadata.name"]', 'writer-contact');
    await crmwriter.fill('[name="spec.email"]', 'writer@example.test');
    await crmwriter.click('[data-action="save"]');
    await visible(crmwriter.locator('[data-object-name="writer-contact"]'));
    expect((await call(gw, 'GET', `${CRM_PEOPLE}/writer-contact`)).body.spec.email).toBe('writer@example.test');
    await count(crmwriter.locator('[data-action="edit"], [data-action="delete"]'), 0);
    for (const p of [editor, crmgetter, crmwriter]) expect(p.errors).toEqual([]);
  });

  it('labels metadata.name and spec.name differently, on plugin routes and generated pages', async () => {
    const page = await browser.page();
    await signIn(page, gw.url, ADMIN.username, ADMIN.password);
    const labels = () =>
      page.evaluate(() =>
        ['metadata.name', 'spec.name'].map((n) => {
          const input = document.querySelector(`[name="${n}"]`) as HTMLInputElement;
          return [...(input.labels ?? [])].map((l) => l.textContent!.replace(/\s*\*\s*$/, '').trim());
        }),
      );
    for (const route of ['persons', MODEL.persons]) {
      await page.click(`a[data-route="${route}"]`);
      await page.click(`[data-page="${route}"] [data-action="create"]`);
      const [meta, spec] = await labels();
      expect(meta).toHaveLength(1);
      expect(spec).toHaveLength(1);
      expect(meta![0]).not.toBe(spec![0]);
      expect(meta![0]).toMatch(/metadata/i);
      expect(spec![0]).toMatch(/spec/i);
      await visible(page.getByLabel(spec![0]!, { exact: true }));
      await page.click('[data-action="cancel"]');
    }
    expect(page.errors).toEqual([]);
  });

  it('signing out revokes the token the console created', async () => {
    const page = await browser.page();
    await signIn(page, gw.url, 'viewer', USERS.viewer.password);
    await visible(page.locator('a[data-route="persons"]'));
    const token = await page.evaluate(() => sessionStorage.getItem('svc.console.token'));
    expect(token).toBeTruthy();
    expect((await call(gw, 'GET', PERSONS, undefined, { authorization: `Bearer ${token}` })).status).toBe(200);
    await page.click('[data-action="sign-out"]');
    await visible(page.locator('input[name=username]'));
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    expect((await call(gw, 'GET', PERSONS, undefined, { authorization: `Bearer ${token}` })).status).toBe(401);
  });
});
