/**
 * The content platform plugin end to end (both stores): the built-in roles get its templates
 * through aggregation and dependencies. A contributor submits but cannot publish, an author
 * publishes only their own posts, a post-manager manages every post, and anonymous visitors see
 * only published posts through api.content.svc.run.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANONYMOUSLY, call, STORES, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { bind, createUser } from '../helpers/rbac.js';
import { plugin } from './fixtures.js';

const UC = '/apis/uc.api.content.svc.run/v1alpha1/posts';
const CONSOLE = '/apis/console.api.content.svc.run/v1alpha1/posts';
const PUBLIC = '/apis/api.content.svc.run/v1alpha1/posts';
const POSTS = '/apis/content.svc.run/v1alpha1/posts';

describe.each(STORES)('content plugin and its roles (%s)', (kind) => {
  let gw: TestGateway;
  const as: Record<string, { authorization: string }> = {};
  const post = (who: string, name: string, slug: string, tags: string[] = []) =>
    call(gw, 'POST', UC, { metadata: { name }, spec: { title: `Title ${name}`, slug, tags, owner: 'someone-else', published: true } }, as[who]);

  beforeAll(async () => {
    gw = await startTestGateway(kind);
    for (const [user, role] of [
      ['carol', 'contributor'],
      ['arthur', 'author'],
      ['anna', 'author'],
      ['pat', 'post-manager'],
      ['nobody', ''],
    ] as const) {
      as[user] = { authorization: await createUser(gw, user) };
      if (role) expect((await bind(gw, user, role)).status).toBe(201);
    }
  });
  afterAll(async () => {
    await gw?.dispose();
  });

  it('is a STARTED platform plugin whose templates aggregate into the built-in roles', async () => {
    const p = await plugin(gw, 'content');
    expect(p.status).toMatchObject({ phase: 'STARTED', platform: true });
    const me = await call(gw, 'GET', '/apis/api.console.svc.run/v1alpha1/users/-/permissions', undefined, as.arthur);
    expect(me.body.roles).toEqual(expect.arrayContaining(['author', 'content-publish-own-posts', 'content-submit-posts']));
    expect(me.body.uiPermissions).toEqual(expect.arrayContaining(['uc:posts:submit', 'uc:posts:publish']));
  });

  it('a contributor submits drafts (owned by them) but cannot publish', async () => {
    const created = await post('carol', 'carol-1', 'carol-first');
    expect(created.status).toBe(201);
    expect(created.body.spec).toMatchObject({ owner: 'carol', published: false });
    expect((await call(gw, 'PUT', `${UC}/carol-1/publish`, undefined, as.carol)).status).toBe(403);
    expect((await call(gw, 'DELETE', `${UC}/carol-1`, undefined, as.carol)).status).toBe(403);
    // nor through the console or the generated API
    expect((await call(gw, 'PUT', `${CONSOLE}/carol-1/publish`, undefined, as.carol)).status).toBe(403);
    expect((await call(gw, 'PATCH', `${POSTS}/carol-1`, { spec: { published: true } }, { ...as.carol, 'content-type': 'application/merge-patch+json' })).status).toBe(403);
    const mine = await call(gw, 'GET', UC, undefined, as.carol);
    expect(mine.body.items.map((p: any) => p.metadata.name)).toEqual(['carol-1']);
    expect((await call(gw, 'GET', `${POSTS}/carol-1`)).body.spec.published).toBe(false);
  });

  it('an author publishes their own posts only', async () => {
    expect((await post('arthur', 'arthur-1', 'arthurs-news', ['News'])).status).toBe(201);
    expect((await post('anna', 'anna-1', 'annas-draft')).status).toBe(201);
    const published = await call(gw, 'PUT', `${UC}/arthur-1/publish`, undefined, as.arthur);
    expect(published.status).toBe(200);
    expect(published.body.spec).toMatchObject({ owner: 'arthur', published: true });
    // someone else's post is not revealed, let alone published
    expect((await call(gw, 'PUT', `${UC}/anna-1/publish`, undefined, as.arthur)).status).toBe(404);
    expect((await call(gw, 'GET', `${UC}/anna-1`, undefined, as.arthur)).status).toBe(404);
    expect((await call(gw, 'PUT', `${UC}/carol-1/publish`, undefined, as.arthur)).status).toBe(404);
    expect((await call(gw, 'GET', `${POSTS}/anna-1`)).body.spec.published).toBe(false);
    expect((await call(gw, 'GET', CONSOLE, undefined, as.arthur)).status).toBe(403);
    // the slug index is unique, whoever asks
    expect((await post('anna', 'anna-2', 'arthurs-news')).status).toBe(409);
  });

  it('a post-manager manages every post', async () => {
    const all = await call(gw, 'GET', `${CONSOLE}?sort=metadata.name,asc`, undefined, as.pat);
    expect(all.status).toBe(200);
    expect(all.body.items.map((p: any) => p.metadata.name)).toEqual(['anna-1', 'arthur-1', 'carol-1']);
    expect((await call(gw, 'PUT', `${CONSOLE}/carol-1/publish`, undefined, as.pat)).status).toBe(200);
    expect((await call(gw, 'GET', `${POSTS}?fieldSelector=spec.owner=anna`, undefined, as.pat)).body.total).toBe(1);
    const edited = await call(gw, 'PATCH', `${POSTS}/anna-1`, { spec: { title: 'Edited' } }, { ...as.pat, 'content-type': 'application/merge-patch+json' });
    expect(edited.status).toBe(200);
    // a user without content roles gets nothing
    expect((await call(gw, 'GET', CONSOLE, undefined, as.nobody)).status).toBe(403);
    expect((await call(gw, 'POST', UC, { spec: { title: 't', slug: 'nobodys' } }, as.nobody)).status).toBe(403);
  });

  it('anonymous visitors see only published posts, through api.content.svc.run', async () => {
    const list = await call(gw, 'GET', PUBLIC, undefined, ANONYMOUSLY);
    expect(list.status).toBe(200);
    expect(list.body.items.map((p: any) => p.metadata.name).sort()).toEqual(['arthur-1', 'carol-1']);
    expect(list.body.items.every((p: any) => p.spec.published === true)).toBe(true);
    const tagged = await call(gw, 'GET', `${PUBLIC}?tag=news`, undefined, ANONYMOUSLY);
    expect(tagged.body.items.map((p: any) => p.metadata.name)).toEqual(['arthur-1']);
    expect((await call(gw, 'GET', `${PUBLIC}/arthurs-news`, undefined, ANONYMOUSLY)).body.metadata.name).toBe('arthur-1');
    expect((await call(gw, 'GET', `${PUBLIC}/annas-draft`, undefined, ANONYMOUSLY)).status).toBe(404);
    // nothing else is public
    expect((await call(gw, 'GET', POSTS, undefined, ANONYMOUSLY)).status).toBe(401);
    expect((await call(gw, 'GET', UC, undefined, ANONYMOUSLY)).status).toBe(401);
    expect((await call(gw, 'GET', CONSOLE, undefined, ANONYMOUSLY)).status).toBe(401);
  });
});
