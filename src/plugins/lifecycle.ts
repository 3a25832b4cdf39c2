/**
 * The plugin lifecycle controller (docs/API.md §7 "Lifecycle"). Each plugin is an object of the
 * Plugin kind (plugin-kind.ts); this controller reconciles its `spec.enabled` with what runs,
 * one plugin change at a time, and reports `status.phase`:
 *
 *   PENDING → STARTING → STARTED ⇄ STOPPED, and FAILED (with `reason`) from STARTING.
 *
 * Start: read manifest, code and bundle from disk → check `requires` are started → register the
 * models all or nothing (indexes are built here; progress goes to `status.indexes` and the log)
 * → mount routes and GraphQL fields → create or overwrite bundle objects, labelled
 * `plugin.svc.run/plugin-name=<name>` → call `start` → STARTED. Any failure undoes the steps
 * already taken and leaves the plugin FAILED; the gateway and the other plugins keep running.
 * Stop reverses it: `stop`, bundle objects deleted, routes and fields gone, models unregistered
 * (their stored objects stay) → STOPPED.
 *
 * Bundle objects are written as the system, so the user who starts a plugin answers for its role
 * templates (docs/API.md §6): a Plugin write by a user that would start the plugin is refused
 * (403, nothing changes) when a template grants, beyond the plugin's own groups and UI
 * permissions or to every caller, what the user does not hold (`admitPluginWrite`). Plugins the
 * gateway starts itself (found in the folder at boot, enabled by the operator) are not checked.
 */
import { join } from 'node:path';
import type { Logger } from 'pino';
import { toApiError } from '../errors/index.js';
import * as ops from '../operations/index.js';
import { isPlainObject, type ApiObject } from '../store/object.js';
import { checkBundleRoles, type BundleRole } from '../authorization/admission.js';
import type { RbacAuthorizer } from '../authorization/rbac-authorizer.js';
import type { AdmissionRequest } from '../registry/hooks.js';
import type { ModelEntry, Registry } from '../registry/registry.js';
import { readBundle, type BundleDocument } from './bundle.js';
import { codeEntry, loadCode, type PluginCode } from './code-loader.js';
import type { MountedRoute, PluginRouteTable } from './custom-routes.js';
import type { GraphQLExtension } from './graphql-extension.js';
import { findPluginDirs, type PluginSource } from './loader.js';
import { PluginError, readManifest, type ConsoleRoute, type PluginManifest } from './manifest.js';
import { createModelClient, privilegedContext } from './model-client.js';
import type { PluginContext } from './plugin-context.js';
import { PLUGIN_KIND, PLUGIN_KIND_OPTIONS, type PluginPhase, type PluginStatus } from './plugin-kind.js';
import { checkBundleObject, checkModelGroup, checkRoute, describeSource, PLUGIN_NAME_LABEL, pluginScope, routeGroups } from './rules.js';
import { relativeToPlugin } from './reasons.js';

/** How often, at most, index-build progress is written to the Plugin object. */
const PROGRESS_WRITE_MS = 250;

export interface LifecycleOptions {
  registry: Registry;
  routes: PluginRouteTable;
  log: Logger;
  pluginsDir: string;
  /** Checks a user's enabling of a plugin against its role templates. */
  rbac: RbacAuthorizer;
  /** Told when the set of GraphQL extensions changes. */
  onGraphQLChange?: () => void;
  /** Throws when a plugin's GraphQL extension cannot join the schema (e.g. a field without @auth). */
  checkGraphQL?: (plugin: string, extension: GraphQLExtension) => void;
}

interface Runtime {
  name: string;
  source: PluginSource;
  manifest?: PluginManifest;
  /** Error reading the manifest at discovery. */
  broken?: string;
  running: boolean;
  code?: PluginCode;
  context?: PluginContext;
  bundle: { entry: ModelEntry; name: string }[];
  /** The spec last acted on, to tell the administrator's writes from status writes. */
  seenSpec?: string;
  /** The status last written (for readiness reasons). */
  status?: PluginStatus;
}

export class PluginController {
  private readonly plugins = new Map<string, Runtime>();
  private readonly extensions = new Map<string, GraphQLExtension>();
  private entry!: ModelEntry;
  private queue: Promise<unknown> = Promise.resolve();
  private unwatch?: () => void;
  private closed = false;

  constructor(private readonly opts: LifecycleOptions) {}

  /** GraphQL extensions of the started plugins. */
  graphqlExtensions(): { plugin: string; extension: GraphQLExtension }[] {
    return [...this.extensions].map(([plugin, extension]) => ({ plugin, extension }));
  }

  /** Console routes (manifest spec.console.routes) of the started plugins, by plugin. */
  consoleRoutes(): { plugin: string; routes: ConsoleRoute[] }[] {
    return [...this.plugins.values()]
      .filter((rt) => rt.running && rt.manifest?.consoleRoutes.length)
      .map((rt) => ({ plugin: rt.name, routes: rt.manifest!.consoleRoutes }));
  }

  /** Phase as this process sees it (for tests and logs). */
  isRunning(name: string): boolean {
    return this.plugins.get(name)?.running ?? false;
  }

  /**
   * Readiness (docs/API.md §10 /readyz): one reason per plugin that is enabled (its spec as last
   * acted on) but not running in this process. No I/O.
   */
  notStarted(): string[] {
    const reasons: string[] = [];
    for (const rt of this.plugins.values()) {
      if (rt.running || rt.seenSpec === undefined) continue;
      const enabled = (JSON.parse(rt.seenSpec) as { enabled?: boolean }).enabled !== false;
      if (!enabled) continue;
      const phase = rt.status?.phase ?? 'PENDING';
      const why = phase === 'FAILED' && rt.status?.reason ? `: ${rt.status.reason}` : '';
      reasons.push(`plugin "${rt.name}" is enabled but not started (${phase}${why})`);
    }
    return reasons;
  }

  /** Registers the Plugin kind, finds the plugins, starts the enabled ones in `requires` order. */
  async boot(): Promise<void> {
    const { registry, log } = this.opts;
    this.entry = await registry.register(PLUGIN_KIND, { ...PLUGIN_KIND_OPTIONS, hooks: { admit: (req) => this.admitPluginWrite(req) } });
    for (const source of await findPluginDirs(this.opts.pluginsDir)) {
      const file = join(source.dir, 'plugin.yaml');
      let manifest: PluginManifest | undefined;
      let broken: string | undefined;
      try {
        manifest = await readManifest(file);
      } catch (e) {
        broken = (e as Error).message;
      }
      const name = manifest?.name ?? dirName(source.dir);
      if (this.plugins.has(name)) {
        log.error({ plugin: name, dir: source.dir }, 'another plugin already has this name; ignored');
        continue;
      }
      this.plugins.set(name, { name, source, manifest, broken, running: false, bundle: [] });
    }
    // Objects first (PENDING), so every plugin is observable before any starts.
    const wanted = new Map<string, boolean>();
    for (const rt of this.plugins.values()) {
      wanted.set(rt.name, await this.upsertObject(rt));
      const stored = await this.entry.store.get(rt.name);
      rt.seenSpec = JSON.stringify(stored?.spec ?? {});
    }
    for (const rt of this.startOrder()) {
      if (rt.broken) await this.fail(rt, rt.broken);
      else if (wanted.get(rt.name)) await this.start(rt);
      else await this.setStatus(rt, { phase: 'STOPPED' });
    }
    this.unwatch = await this.entry.store.watch(undefined, (e) => {
      if (this.closed) return;
      const obj = e.object;
      const name = obj.metadata.name;
      this.enqueue(() => this.reconcile(name, e.type === 'DELETED' ? undefined : obj));
    });
  }

  /** Stops every running plugin (reverse start order). */
  async close(): Promise<void> {
    this.closed = true;
    this.unwatch?.();
    await this.enqueue(async () => {
      for (const rt of this.startOrder().reverse()) if (rt.running) await this.stop(rt, { keepStatus: true });
    });
  }

  private enqueue<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch((e) => this.opts.log.error({ err: (e as Error).message }, 'plugin controller step failed'));
    return run;
  }

  /**
   * Brings one plugin to what its object asks for. Only a change of `spec` acts (our own status
   * writes come back as events too); a FAILED plugin is retried when its spec changes
   * (e.g. `enabled` set to false, then true).
   */
  private async reconcile(name: string, obj: ApiObject | undefined): Promise<void> {
    const rt = this.plugins.get(name);
    if (!rt) return;
    const spec = obj ? JSON.stringify(obj.spec ?? {}) : undefined;
    const touched = obj ? spec !== rt.seenSpec : true;
    rt.seenSpec = spec;
    if (!touched) return;
    const enabled = obj ? (obj.spec as { enabled?: boolean } | undefined)?.enabled !== false : false;
    if (enabled && !rt.running) {
      if (rt.broken) await this.fail(rt, rt.broken);
      else await this.start(rt);
    } else if (!enabled && rt.running) {
      await this.stop(rt, { keepStatus: !obj });
    } else if (!enabled && obj) {
      await this.setStatus(rt, { phase: 'STOPPED' });
    }
  }

  /**
   * A user's Plugin write that would start the plugin (enabled, and before it was disabled or the
   * plugin is not running here) needs them to hold what its role templates grant beyond the
   * plugin (checkBundleRoles). A plugin that cannot be read is let through: its start fails with
   * the reason, as for any other caller.
   */
  private async admitPluginWrite(req: AdmissionRequest): Promise<void> {
    if (req.caller.via === 'system' || req.subresource || !req.object) return;
    const rt = this.plugins.get(req.object.metadata.name);
    const enabled = (o: ApiObject | undefined) => !!o && (o.spec as { enabled?: boolean } | undefined)?.enabled !== false;
    if (!rt || rt.broken || !enabled(req.object)) return;
    if (req.old && JSON.stringify(req.old.spec ?? {}) === JSON.stringify(req.object.spec ?? {})) return; // reconcile acts on spec changes only
    if (enabled(req.old) && rt.running) return;
    let templates: BundleRole[];
    let groups: Set<string>;
    try {
      ({ templates, groups } = await this.readTemplates(rt));
    } catch (e) {
      if (e instanceof PluginError) return;
      throw e;
    }
    await checkBundleRoles(this.opts.rbac, req.caller, `enable plugin "${rt.name}"`, templates, pluginScope(rt.name, groups));
  }

  /** The role templates of a plugin's bundle as start would write them, and the groups it owns. */
  private async readTemplates(rt: Runtime): Promise<{ templates: BundleRole[]; groups: Set<string> }> {
    const manifest = await readManifest(join(rt.source.dir, 'plugin.yaml'));
    const code = await loadCode(rt.source.dir);
    const groups = routeGroups([...manifest.models, ...(code?.models ?? [])].map((m) => m.group));
    const templates: BundleRole[] = [];
    for (const doc of await readBundle(rt.source.dir)) {
      if (doc.object.apiVersion !== 'v1alpha1' || doc.object.kind !== 'Role') continue;
      checkBundleObject(rt.name, doc.object, true, doc.source);
      templates.push({ object: this.bundleBody(rt, doc) as unknown as ApiObject, where: describeSource(doc.source) });
    }
    return { templates, groups };
  }

  /** Plugins ordered so that each comes after those it requires (cycles keep file order). */
  private startOrder(): Runtime[] {
    const out: Runtime[] = [];
    const state = new Map<string, 'visiting' | 'done'>();
    const visit = (rt: Runtime) => {
      if (state.has(rt.name)) return;
      state.set(rt.name, 'visiting');
      for (const r of rt.manifest?.requires ?? []) {
        const dep = this.plugins.get(r);
        if (dep) visit(dep);
      }
      state.set(rt.name, 'done');
      out.push(rt);
    };
    for (const rt of this.plugins.values()) visit(rt);
    return out;
  }

  /** Creates the Plugin object or refreshes its spec from the manifest; returns spec.enabled. */
  private async upsertObject(rt: Runtime): Promise<boolean> {
    const ctx = privilegedContext('plugin-controller');
    const m = rt.manifest;
    const spec = {
      version: m?.version ?? '',
      displayName: m?.displayName ?? rt.name,
      description: m?.description ?? '',
      requires: m?.requires ?? [],
      enabled: m?.enabled ?? false,
    };
    const existing = await this.entry.store.get(rt.name);
    if (!existing) {
      try {
        await ops.createObject(ctx, this.entry, {
          apiVersion: 'plugin.svc.run/v1alpha1',
          kind: 'Plugin',
          metadata: { name: rt.name },
          spec,
        });
      } catch (e) {
        // Another gateway process on the same database created it meanwhile: refresh it instead.
        if (toApiError(e).status === 409) return this.upsertObject(rt);
        throw e;
      }
      await this.setStatus(rt, { phase: 'PENDING' });
      return spec.enabled;
    }
    // The administrator's choice (spec.enabled) survives restarts; the rest follows the manifest.
    const enabled = (existing.spec as { enabled?: boolean } | undefined)?.enabled ?? spec.enabled;
    await ops.patchObject(ctx, this.entry, rt.name, { spec: { ...spec, enabled } }, 'merge');
    await this.setStatus(rt, { phase: 'PENDING' });
    return enabled;
  }

  private async setStatus(rt: Runtime, status: PluginStatus): Promise<void> {
    const full: PluginStatus = {
      ...status,
      version: status.version ?? rt.manifest?.version,
      platform: rt.source.platform,
      lastTransitionTime: new Date().toISOString(),
    };
    rt.status = full;
    try {
      await ops.updateStatus(privilegedContext('plugin-controller'), this.entry, rt.name, full);
    } catch (e) {
      if (toApiError(e).status !== 404) this.opts.log.warn({ plugin: rt.name, err: (e as Error).message }, 'cannot write plugin status');
    }
  }

  private async fail(rt: Runtime, why: string): Promise<void> {
    const reason = relativeToPlugin(rt.source.dir, why);
    this.opts.log.error({ plugin: rt.name, dir: rt.source.dir, reason }, 'plugin failed');
    await this.setStatus(rt, { phase: 'FAILED', reason });
  }

  private async start(rt: Runtime): Promise<void> {
    const { registry, routes, log } = this.opts;
    const name = rt.name;
    await this.setStatus(rt, { phase: 'STARTING', reason: 'reading the plugin' });
    log.info({ plugin: name }, 'plugin starting');
    let registered = false;
    let mounted = false;
    try {
      // Read afresh: a plugin updated on disk is picked up by stop + start.
      const manifest = await readManifest(join(rt.source.dir, 'plugin.yaml'));
      if (manifest.name !== name) throw new PluginError(`${join(rt.source.dir, 'plugin.yaml')}: metadata.name changed from "${name}" to "${manifest.name}"; restart the gateway`);
      rt.manifest = manifest;
      const code = await loadCode(rt.source.dir);
      const bundle = await readBundle(rt.source.dir);
      for (const req of manifest.requires) {
        if (!this.plugins.get(req)?.running) throw new PluginError(`requires plugin "${req}", which is not started`);
      }
      const manifestFile = join(rt.source.dir, 'plugin.yaml');
      const codeFile = codeEntry(rt.source.dir) ?? 'index';
      const models = [
        ...manifest.models.map((m, i) => ({ m, where: `${manifestFile} spec.models[${i}]` })),
        ...(code?.models ?? []).map((m, i) => ({ m, where: `${codeFile} models[${i}]` })),
      ];
      for (const { m, where } of models) checkModelGroup(name, m.group, rt.source.platform, where);

      // 1. models and their indexes
      const progress = new ProgressWriter((indexes) => this.setStatus(rt, { phase: 'STARTING', reason: 'building indexes', indexes }));
      let entries: ModelEntry[];
      try {
        entries = await registry.registerAll(
          models.map((x) => x.m),
          {
            plugin: name,
            pluginVersion: manifest.version,
            platform: rt.source.platform,
            onProgress: (p) => {
              log.info({ plugin: name, model: p.model, index: p.index, processed: p.processed }, 'building index');
              progress.report(p);
            },
          },
        );
      } catch (e) {
        throw new PluginError(`models refused: ${(e as Error).message}`);
      } finally {
        await progress.flush();
      }
      registered = true;

      // 2. routes and GraphQL fields
      const owned = routeGroups(entries.map((e) => e.model.group));
      const mountedRoutes: MountedRoute[] = (code?.routes ?? []).map((r, i) => {
        const checked = checkRoute(name, r, owned, (g, v, res) => registry.find(g, v, res) !== undefined, `${codeFile} routes[${i}]`);
        return { plugin: name, method: checked.method, segments: checked.segments, handler: r.handler, ...(r.openapi ? { openapi: r.openapi } : {}) };
      });
      try {
        routes.mount(name, mountedRoutes);
      } catch (e) {
        throw new PluginError(`${codeFile}: ${(e as Error).message}`);
      }
      mounted = true;
      if (code?.graphql) {
        try {
          this.opts.checkGraphQL?.(name, code.graphql);
        } catch (e) {
          throw new PluginError(`${codeFile}: ${(e as Error).message}`);
        }
        this.extensions.set(name, code.graphql);
        this.opts.onGraphQLChange?.();
      }

      // 3. bundle objects
      const resolved = bundle.map((doc) => this.resolveBundleDocument(rt, doc));
      for (const { doc, entry } of resolved) {
        await this.writeBundleObject(rt, doc, entry);
      }

      // 4. the plugin's own start
      rt.code = code;
      rt.context = {
        plugin: name,
        log: log.child({ plugin: name }),
        privileged: createModelClient(registry, name, privilegedContext(name)),
      };
      if (code?.start) {
        try {
          await code.start(rt.context);
        } catch (e) {
          throw new PluginError(`start() failed: ${(e as Error).message}`);
        }
      }
      rt.running = true;
      await this.setStatus(rt, { phase: 'STARTED', version: manifest.version });
      log.info({ plugin: name, version: manifest.version, models: entries.length, routes: mountedRoutes.length }, 'plugin started');
    } catch (e) {
      // Undo whatever was done; the rest of the gateway is untouched.
      await this.deleteBundleObjects(rt);
      if (this.extensions.delete(name)) this.opts.onGraphQLChange?.();
      if (mounted) routes.unmount(name);
      if (registered) await registry.unregisterPlugin(name);
      rt.running = false;
      await this.fail(rt, e instanceof PluginError ? e.message : `unexpected error: ${(e as Error).message}`);
    }
  }

  private async stop(rt: Runtime, opts: { keepStatus?: boolean } = {}): Promise<void> {
    const { registry, routes, log } = this.opts;
    const name = rt.name;
    log.info({ plugin: name }, 'plugin stopping');
    if (rt.code?.stop && rt.context) {
      try {
        await rt.code.stop(rt.context);
      } catch (e) {
        log.error({ plugin: name, err: (e as Error).message }, 'plugin stop() failed; stopping anyway');
      }
    }
    await this.deleteBundleObjects(rt);
    routes.unmount(name);
    if (this.extensions.delete(name)) this.opts.onGraphQLChange?.();
    await registry.unregisterPlugin(name);
    rt.running = false;
    rt.code = undefined;
    rt.context = undefined;
    if (!opts.keepStatus) await this.setStatus(rt, { phase: 'STOPPED' });
    log.info({ plugin: name }, 'plugin stopped');
  }

  /** The model a bundle document is an object of, decided by apiVersion and kind only. */
  private resolveBundleDocument(rt: Runtime, doc: BundleDocument): { doc: BundleDocument; entry: ModelEntry } {
    const where = describeSource(doc.source);
    const { apiVersion, kind } = doc.object;
    const isRole = apiVersion === 'v1alpha1' && kind === 'Role';
    const entry = this.opts.registry.findByKind(apiVersion, kind);
    if (!entry) throw new PluginError(`${where}: no model serves apiVersion "${apiVersion}" kind "${kind}"`);
    if (!isRole && entry.model.plugin !== rt.name) {
      throw new PluginError(`${where}: a bundle may declare role templates and objects of the plugin's own models, not ${kind} (${apiVersion})`);
    }
    checkBundleObject(rt.name, doc.object, isRole, doc.source);
    return { doc, entry };
  }

  /** Creates the object, or overwrites the stored one (keeping its version for the lock). */
  private async writeBundleObject(rt: Runtime, doc: BundleDocument, entry: ModelEntry): Promise<void> {
    const ctx = privilegedContext(rt.name);
    const name = (doc.object.metadata as Record<string, unknown>).name as string;
    const body = this.bundleBody(rt, doc);
    try {
      const existing = await entry.store.get(name);
      if (existing) {
        const owner = existing.metadata.labels?.[PLUGIN_NAME_LABEL];
        if (owner !== undefined && owner !== rt.name) throw new PluginError(`${describeSource(doc.source)}: ${doc.object.kind} "${name}" belongs to plugin "${owner}"`);
        (body.metadata as Record<string, unknown>).version = existing.metadata.version;
        await ops.updateObject(ctx, entry, name, body);
      } else {
        await ops.createObject(ctx, entry, body);
      }
      rt.bundle.push({ entry, name });
    } catch (e) {
      if (e instanceof PluginError) throw e;
      const err = toApiError(e);
      const fields = (err as { errors?: { field: string; message: string }[] }).errors;
      const detail = fields?.length ? `${err.message}: ${fields.map((f) => `${f.field} ${f.message}`).join('; ')}` : err.message;
      throw new PluginError(`${describeSource(doc.source)}: ${doc.object.kind} "${name}" refused: ${detail}`);
    }
  }

  /** A bundle document as written: labelled with its plugin. */
  private bundleBody(rt: Runtime, doc: BundleDocument): Record<string, unknown> & { metadata: Record<string, unknown> } {
    const meta = doc.object.metadata as Record<string, unknown>;
    const labels = { ...(isPlainObject(meta.labels) ? meta.labels : {}), [PLUGIN_NAME_LABEL]: rt.name };
    return { ...doc.object, metadata: { ...meta, labels } };
  }

  private async deleteBundleObjects(rt: Runtime): Promise<void> {
    const ctx = privilegedContext(rt.name);
    for (const { entry, name } of rt.bundle.reverse()) {
      try {
        await ops.deleteObject(ctx, entry, name);
      } catch (e) {
        if (toApiError(e).status !== 404) this.opts.log.warn({ plugin: rt.name, object: name, err: (e as Error).message }, 'cannot delete bundle object');
      }
    }
    rt.bundle = [];
  }
}

const dirName = (dir: string) => dir.split(/[\\/]/).filter(Boolean).pop() ?? dir;

/** Collects index-build progress and writes it at most every PROGRESS_WRITE_MS. */
class ProgressWriter {
  private readonly latest = new Map<string, { model: string; index: string; processed: number }>();
  private last = 0;
  private pending?: Promise<void>;

  constructor(private readonly write: (indexes: { model: string; index: string; processed: number }[]) => Promise<void>) {}

  report(p: { model: string; index: string; processed: number }): void {
    this.latest.set(`${p.model}\u0000${p.index}`, { model: p.model, index: p.index, processed: p.processed });
    const now = Date.now();
    if (now - this.last < PROGRESS_WRITE_MS || this.pending) return;
    this.last = now;
    this.pending = this.write([...this.latest.values()]).finally(() => (this.pending = undefined));
  }

  async flush(): Promise<void> {
    await this.pending;
    if (this.latest.size) await this.write([...this.latest.values()]);
  }
}

export type { PluginPhase };
