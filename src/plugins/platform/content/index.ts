/**
 * The content platform plugin: the Post model and three custom APIs.
 *
 *   uc.api.content.svc.run       the caller's own posts: create (submit a draft), list, get,
 *                                edit, publish, delete. RBAC decides which verbs a caller has
 *                                (contributor: submit; author: also publish/delete); ownership
 *                                is enforced here, so the handlers use the privileged client.
 *   console.api.content.svc.run  every post, through `ctx.client` acting as the caller (so the
 *                                caller needs the rights on content.svc.run posts as well).
 *   api.content.svc.run          published posts, for anonymous visitors.
 */
import { BadRequest, Forbidden, NotFound } from '../../../errors/index.js';
import type { ApiObject } from '../../../store/object.js';
import type { PluginCode } from '../../code-loader.js';
import type { PluginRouteContext } from '../../plugin-context.js';

const GROUP = 'content.svc.run';
const VERSION = 'v1alpha1';

interface PostSpec {
  title: string;
  slug: string;
  owner?: string;
  content?: string;
  tags?: string[];
  published?: boolean;
  publishTime?: string;
}

const specOf = (o: ApiObject) => (o.spec ?? {}) as PostSpec;

const json = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });

async function readBody(request: Request): Promise<Record<string, unknown>> {
  let body: unknown;
  try {
    body = await request.json();
  } catch {
    throw new BadRequest('the request body must be JSON');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new BadRequest('the request body must be a JSON object');
  return body as Record<string, unknown>;
}

function requireUser(ctx: PluginRouteContext): string {
  if (!ctx.user.authenticated) throw new Forbidden('log in to manage your posts');
  return ctx.user.username;
}

/** The caller's own post, or 404 (someone else's post is not revealed). */
async function ownPost(ctx: PluginRouteContext, name: string): Promise<ApiObject> {
  const user = requireUser(ctx);
  let post: ApiObject;
  try {
    post = await ctx.privileged.get('posts', name);
  } catch (e) {
    if ((e as { status?: number }).status === 404) throw new NotFound(`post "${name}" not found`);
    throw e;
  }
  if (specOf(post).owner !== user) throw new NotFound(`post "${name}" not found`);
  return post;
}

const pageParams = (url: URL) => ({
  page: url.searchParams.has('page') ? Number(url.searchParams.get('page')) : undefined,
  size: url.searchParams.has('size') ? Number(url.searchParams.get('size')) : undefined,
});

const UC = `/apis/uc.api.${GROUP}/${VERSION}/posts`;
const CONSOLE = `/apis/console.api.${GROUP}/${VERSION}/posts`;
const PUBLIC = `/apis/api.${GROUP}/${VERSION}/posts`;

const code: PluginCode = {
  models: [
    {
      group: GROUP,
      version: VERSION,
      kind: 'Post',
      singular: 'post',
      plural: 'posts',
      schema: {
        required: ['spec'],
        properties: {
          spec: {
            type: 'object',
            required: ['title', 'slug'],
            properties: {
              title: { type: 'string', minLength: 1, maxLength: 256 },
              slug: { type: 'string', pattern: '^[a-z0-9]+(-[a-z0-9]+)*$', maxLength: 128 },
              owner: { type: 'string', maxLength: 253, description: 'Username of the author.' },
              content: { type: 'string', maxLength: 1000000 },
              tags: { type: 'array', items: { type: 'string', maxLength: 64 }, maxItems: 32 },
              published: { type: 'boolean' },
              publishTime: { type: 'string' },
            },
          },
          status: { type: 'object' },
        },
      },
      indexes: [
        { name: 'spec.owner', path: 'spec.owner' },
        { name: 'spec.slug', path: 'spec.slug', unique: true },
        { name: 'spec.published', indexFunc: (o) => (specOf(o).published ? 'true' : 'false') },
        // Multi-valued: one value per tag, case-folded, so `fieldSelector=spec.tags=news` finds "News".
        { name: 'spec.tags', indexFunc: (o) => (specOf(o).tags ?? []).map((t) => t.toLowerCase()) },
        { name: 'spec.publishTime', path: 'spec.publishTime', order: 'DESC' },
      ],
    },
  ],
  routes: [
    // --- user centre: the caller's own posts ----------------------------------------------
    {
      method: 'POST',
      path: UC,
      async handler(request, ctx) {
        const owner = requireUser(ctx);
        const body = await readBody(request);
        const spec: Record<string, unknown> = { ...((body.spec ?? {}) as Record<string, unknown>), owner, published: false };
        delete spec.publishTime;
        const meta = (body.metadata ?? {}) as Record<string, unknown>;
        const post = await ctx.privileged.create('posts', {
          apiVersion: `${GROUP}/${VERSION}`,
          kind: 'Post',
          metadata: { name: meta.name, generateName: meta.name ? undefined : 'post-', labels: meta.labels },
          spec,
        });
        return json(post, 201, { location: `${UC}/${post.metadata.name}` });
      },
    },
    {
      method: 'GET',
      path: UC,
      async handler(request, ctx) {
        const owner = requireUser(ctx);
        const url = new URL(request.url);
        return json(await ctx.privileged.list('posts', { ...pageParams(url), fieldSelector: [`spec.owner=${owner}`] }));
      },
    },
    {
      method: 'GET',
      path: `${UC}/{name}`,
      handler: async (_request, ctx) => json(await ownPost(ctx, ctx.params.name!)),
    },
    {
      method: 'PUT',
      path: `${UC}/{name}`,
      async handler(request, ctx) {
        const post = await ownPost(ctx, ctx.params.name!);
        const body = await readBody(request);
        const old = specOf(post);
        // Owner and publish state are not the caller's to set here.
        const spec = { ...((body.spec ?? {}) as Record<string, unknown>), owner: old.owner, published: old.published, publishTime: old.publishTime };
        return json(await ctx.privileged.update('posts', post.metadata.name, { ...post, spec }));
      },
    },
    {
      method: 'PUT',
      path: `${UC}/{name}/publish`,
      async handler(_request, ctx) {
        const post = await ownPost(ctx, ctx.params.name!);
        return json(await ctx.privileged.patch('posts', post.metadata.name, { spec: { published: true, publishTime: new Date().toISOString() } }));
      },
    },
    {
      method: 'DELETE',
      path: `${UC}/{name}`,
      async handler(_request, ctx) {
        const post = await ownPost(ctx, ctx.params.name!);
        return json(await ctx.privileged.delete('posts', post.metadata.name));
      },
    },
    // --- console: every post, as the caller ------------------------------------------------
    {
      method: 'GET',
      path: CONSOLE,
      async handler(request, ctx) {
        const url = new URL(request.url);
        return json(
          await ctx.client.list('posts', {
            ...pageParams(url),
            fieldSelector: url.searchParams.getAll('fieldSelector'),
            labelSelector: url.searchParams.getAll('labelSelector'),
            sort: url.searchParams.getAll('sort'),
          }),
        );
      },
    },
    {
      method: 'PUT',
      path: `${CONSOLE}/{name}/publish`,
      async handler(_request, ctx) {
        return json(await ctx.client.patch('posts', ctx.params.name!, { spec: { published: true, publishTime: new Date().toISOString() } }));
      },
    },
    // --- public: published posts ---------------------------------------------------------
    {
      method: 'GET',
      path: PUBLIC,
      async handler(request, ctx) {
        const url = new URL(request.url);
        const tag = url.searchParams.get('tag');
        const result = await ctx.privileged.list('posts', {
          ...pageParams(url),
          fieldSelector: ['spec.published=true', ...(tag ? [`spec.tags=${tag.toLowerCase()}`] : [])],
          sort: ['spec.publishTime,desc'],
        });
        return json({ ...result, items: result.items.filter((p) => !p.metadata.deletionTimestamp) });
      },
    },
    {
      method: 'GET',
      path: `${PUBLIC}/{slug}`,
      async handler(_request, ctx) {
        if (!/^[a-z0-9]+(-[a-z0-9]+)*$/.test(ctx.params.slug!)) throw new NotFound(`no published post "${ctx.params.slug}"`);
        const found = await ctx.privileged.list('posts', { fieldSelector: [`spec.slug=${ctx.params.slug}`, 'spec.published=true'], size: 1 });
        const post = found.items[0];
        if (!post) throw new NotFound(`no published post "${ctx.params.slug}"`);
        return json(post);
      },
    },
  ],
};

export default code;
