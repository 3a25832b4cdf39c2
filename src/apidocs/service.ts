/**
 * Discovery and OpenAPI documents for one caller (docs/API.md §8).
 *
 * What a caller sees is what the authorizer lets it read: a model appears when the caller may
 * `get` or `list` it (a resourceNames grant counts), its `status` subresource when it may `get`
 * `{plural}/status`, a custom route when it may call it. Documents are built from the registry
 * and the mounted custom routes, and cached per registry generation (bumped by every
 * registration, removal, mount and unmount) and per set of visible entries, so callers with the
 * same view share one document, one hash and one ETag, and a plugin starting or stopping
 * changes them at once.
 */
import { createHash } from 'node:crypto';
import type { Caller } from '../identity/caller.js';
import type { MountedRoute } from '../plugins/custom-routes.js';
import type { Attributes, Authorizer } from '../identity/authorizer.js';
import { attributesOf } from '../identity/authorizer.js';
import type { Model } from '../registry/model.js';
import type { Registry } from '../registry/registry.js';
import { parseRequestInfo } from '../requestinfo/requestinfo.js';
import { buildDocument, groupVersionKey, type DocumentedRoute, type DocumentModel } from './openapi.js';
import { PLATFORM_ROUTES } from './platform-docs.js';

export const RESOURCE_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];
export const STATUS_VERBS = ['get', 'patch', 'update'];

export interface GroupVersionRef {
  groupVersion: string;
  version: string;
}
export interface ApiGroup {
  name: string;
  versions: GroupVersionRef[];
  preferredVersion: GroupVersionRef;
}
export interface ApiResource {
  name: string;
  singularName: string;
  kind: string;
  verbs: string[];
}

/** A served document: its JSON text and content hash (also its ETag). */
export interface ServedDocument {
  text: string;
  hash: string;
}

export interface ApiDocsDeps {
  registry: Registry;
  authorizer: Authorizer;
  /** The mounted custom routes, and a number that changes whenever they do. */
  routes: { list(): readonly MountedRoute[]; version: number };
}

interface View {
  models: DocumentModel[];
  /** Custom routes of plugins and the platform's own routes (tokens, permissions). */
  routes: DocumentedRoute[];
  /** Stable text naming what is visible (the cache key). */
  signature: string;
}

/** Kubernetes' version order: GA before beta before alpha, higher numbers first. */
export function compareVersions(a: string, b: string): number {
  const parse = (v: string) => {
    const m = /^v(\d+)(?:(alpha|beta)(\d+))?$/.exec(v);
    if (!m) return undefined;
    return { major: Number(m[1]), stage: m[2] === 'alpha' ? 0 : m[2] === 'beta' ? 1 : 2, minor: Number(m[3] ?? 0) };
  };
  const pa = parse(a);
  const pb = parse(b);
  if (pa && pb) return pb.stage - pa.stage || pb.major - pa.major || pb.minor - pa.minor;
  if (pa) return -1;
  if (pb) return 1;
  return a.localeCompare(b);
}

const hashOf = (text: string) => createHash('sha512').update(text).digest('hex').toUpperCase();
const MAX_CACHED = 256;

export class ApiDocs {
  private generation = 0;
  private cache = new Map<string, ServedDocument>();
  private cachedGeneration = '';

  constructor(private readonly deps: ApiDocsDeps) {
    deps.registry.onChange(() => {
      this.generation++;
    });
  }

  private currentGeneration(): string {
    const g = `${this.generation}.${this.deps.routes.version}`;
    if (g !== this.cachedGeneration) {
      this.cache.clear();
      this.cachedGeneration = g;
    }
    return g;
  }

  private async may(attrs: Attributes): Promise<boolean> {
    const d = await this.deps.authorizer.authorize(attrs);
    return d.allowed || !!d.names?.size;
  }

  private resourceAttrs(caller: Caller, m: Model, verb: string, subresource = ''): Attributes {
    return { caller, verb, isResourceRequest: true, apiGroup: m.group, apiVersion: m.version, resource: m.plural, subresource, name: '', path: '' };
  }

  /** What `caller` may read: models (with or without status) and custom routes. */
  private async view(caller: Caller): Promise<View> {
    const models: DocumentModel[] = [];
    const entries = this.deps.registry.entries().sort((a, b) => a.model.storage.key.localeCompare(b.model.storage.key));
    await Promise.all(
      entries.map(async ({ model }) => {
        const readable = (await this.may(this.resourceAttrs(caller, model, 'list'))) || (await this.may(this.resourceAttrs(caller, model, 'get')));
        if (!readable) return;
        const status = await this.may(this.resourceAttrs(caller, model, 'get', 'status'));
        models.push({ model, status });
      }),
    );
    models.sort((a, b) => a.model.storage.key.localeCompare(b.model.storage.key));
    // Sorted, so a plugin restarted (its routes mounted again, last) gives the same documents.
    const routeKey = (r: DocumentedRoute) => `/${r.segments.join('/')} ${r.method}`;
    const all = [...PLATFORM_ROUTES, ...this.deps.routes.list()].sort((a, b) => routeKey(a).localeCompare(routeKey(b)));
    // A route is asked about with `-` for its path parameters (`users/-/permissions` is everyone's own).
    const asked = (r: DocumentedRoute) => `/${r.segments.map((s) => (s.startsWith('{') ? '-' : s)).join('/')}`;
    const allowed = await Promise.all(all.map((r) => this.may(attributesOf(caller, parseRequestInfo(r.method, asked(r))))));
    const routes = all.filter((_, i) => allowed[i]);
    const signature = [
      ...models.map((m) => `${m.model.storage.key}${m.status ? '+s' : ''}`),
      ...all.map((r, i) => (allowed[i] ? `${r.method} /${r.segments.join('/')}` : '')).filter(Boolean),
    ].join('\n');
    return { models, routes, signature };
  }

  // --- discovery --------------------------------------------------------------------------

  async groups(caller: Caller): Promise<ApiGroup[]> {
    const { models } = await this.view(caller);
    const versions = new Map<string, Set<string>>();
    for (const { model } of models) {
      if (!model.group) continue;
      let set = versions.get(model.group);
      if (!set) versions.set(model.group, (set = new Set()));
      set.add(model.version);
    }
    return [...versions.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([name, set]) => {
        const vs = [...set].sort(compareVersions).map((version) => ({ groupVersion: `${name}/${version}`, version }));
        return { name, versions: vs, preferredVersion: vs[0]! };
      });
  }

  /** The resources of one group-version the caller may read, or undefined when it sees none. */
  async resources(caller: Caller, group: string, version: string): Promise<{ groupVersion: string; resources: ApiResource[] } | undefined> {
    const { models } = await this.view(caller);
    const resources: ApiResource[] = [];
    for (const { model, status } of models) {
      if (model.group !== group || model.version !== version) continue;
      resources.push({ name: model.plural, singularName: model.singular, kind: model.kind, verbs: RESOURCE_VERBS });
      if (status) resources.push({ name: `${model.plural}/status`, singularName: '', kind: model.kind, verbs: STATUS_VERBS });
    }
    if (!resources.length) return undefined;
    return { groupVersion: group ? `${group}/${version}` : version, resources };
  }

  // --- OpenAPI ----------------------------------------------------------------------------

  private groupVersionsOf(view: View): Map<string, { group: string; version: string }> {
    const out = new Map<string, { group: string; version: string }>();
    for (const { model } of view.models) out.set(groupVersionKey(model.group, model.version), { group: model.group, version: model.version });
    for (const r of view.routes) out.set(groupVersionKey(r.segments[1]!, r.segments[2]!), { group: r.segments[1]!, version: r.segments[2]! });
    return new Map([...out.entries()].sort(([a], [b]) => a.localeCompare(b)));
  }

  private cached(key: string, build: () => Record<string, unknown>): ServedDocument {
    let doc = this.cache.get(key);
    if (!doc) {
      const text = JSON.stringify(build());
      doc = { text, hash: hashOf(text) };
      if (this.cache.size >= MAX_CACHED) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(key, doc);
    }
    return doc;
  }

  private groupVersionDocument(view: View, generation: string, group: string, version: string): ServedDocument | undefined {
    const key = groupVersionKey(group, version);
    const models = view.models.filter((m) => m.model.group === group && m.model.version === version);
    const routes = view.routes.filter((r) => r.segments[1] === group && r.segments[2] === version);
    if (!models.length && !routes.length) return undefined;
    // Schemas a documented custom route may reference: the models of its plugin.
    const plugins = new Set(routes.map((r) => r.plugin));
    const extraSchemas = this.deps.registry
      .entries()
      .map((e) => e.model)
      .filter((m) => m.plugin && plugins.has(m.plugin));
    const signature = `${models.map((m) => `${m.model.storage.key}${m.status ? '+s' : ''}`).join(',')}|${routes.map((r) => `${r.method} ${r.segments.join('/')}`).join(',')}`;
    return this.cached(`${generation}|${key}|${signature}`, () =>
      buildDocument({
        title: `svc gateway ${group ? `${group}/${version}` : `core ${version}`}`,
        description: group ? `The ${group}/${version} API.` : `The platform kinds (users, roles, role bindings) at /api/${version}.`,
        models,
        routes,
        extraSchemas,
        qualified: false,
      }),
    );
  }

  /** `{paths: {"apis/<g>/<v>": {serverRelativeURL}}}`: one entry per group-version the caller sees. */
  async index(caller: Caller): Promise<{ paths: Record<string, { serverRelativeURL: string }> }> {
    const generation = this.currentGeneration();
    const view = await this.view(caller);
    const paths: Record<string, { serverRelativeURL: string }> = {};
    for (const [key, { group, version }] of this.groupVersionsOf(view)) {
      const doc = this.groupVersionDocument(view, generation, group, version);
      if (doc) paths[key] = { serverRelativeURL: `/openapi/v3/${key}?hash=${doc.hash}` };
    }
    return { paths };
  }

  /** The document of one group-version, or undefined when the caller sees nothing in it. */
  async document(caller: Caller, group: string, version: string): Promise<ServedDocument | undefined> {
    const generation = this.currentGeneration();
    return this.groupVersionDocument(await this.view(caller), generation, group, version);
  }

  /** One document with every path the caller sees (/openapi.json). */
  async combined(caller: Caller): Promise<ServedDocument> {
    const generation = this.currentGeneration();
    const view = await this.view(caller);
    return this.cached(`${generation}|*|${view.signature}`, () =>
      buildDocument({
        title: 'svc gateway API',
        description: 'Every REST path of the gateway: platform kinds, plugin models and plugin custom routes. GraphQL is at /graphql.',
        models: view.models,
        routes: view.routes,
        extraSchemas: this.deps.registry
          .entries()
          .map((e) => e.model)
          .filter((m) => m.plugin && view.routes.some((r) => r.plugin === m.plugin)),
        qualified: true,
      }),
    );
  }
}
