/**
 * The set of registered models and their storage. The registry owns what it registers
 * (`ModelEntry`).
 *
 * Every change is serialized: one registration or removal at a time, in call order, so two
 * plugins starting together can't interleave their checks and publications.
 * A set of models (one plugin's) registers all or nothing: every declaration is compiled and
 * checked, every model's storage is opened (which builds its indexes over existing objects),
 * and only then are they all published together. Nothing is served before its indexes exist.
 * Listeners (GraphQL schema swap, the watch hub ending the streams of removed models) are told
 * after every change, with the entries it removed.
 */
import type { IndexBuildProgress, ModelStore, Store } from '../store/types.js';
import { compileModel, RegistrationError, type CompileOptions } from './compile.js';
import type { KindHooks } from './hooks.js';
import type { Model, ModelDeclaration } from './model.js';
import { LIMITS, type GatewayLimits } from '../limits.js';

export { RegistrationError };

/** A registered model together with its storage. */
export interface ModelEntry {
  model: Model;
  store: ModelStore;
  /** The gateway's limits (its registry's), which the operations on this model enforce. */
  limits: Readonly<GatewayLimits>;
  /** Per-kind behaviour of platform kinds (registry/hooks.ts). */
  hooks?: KindHooks;
}

/** What a registry change removed (`why`: e.g. the plugin that stopped), for change listeners. */
export interface RegistryChange {
  removed: readonly ModelEntry[];
  why?: string;
}

/**
 * Extra checks over the whole set of models (e.g. GraphQL name clashes), told which of them are
 * being registered (e.g. GraphQL references, checked for the models that declare them); throw to refuse.
 */
export type RegistryCheck = (models: Model[], added: Model[]) => void;

export type RegisterOptions = CompileOptions & {
  onProgress?: (p: IndexBuildProgress & { model: string }) => void;
  /** Platform kinds only: strategy/admission hooks of the (single) model registered. */
  hooks?: KindHooks;
};

const keyOf = (group: string, version: string, plural: string) => `${group}\u0000${version}\u0000${plural}`;
const keyOfModel = (m: Model) => keyOf(m.group, m.version, m.plural);

export class Registry {
  private readonly byKey = new Map<string, ModelEntry>();
  private readonly listeners = new Set<(change: RegistryChange) => void>();
  private readonly checks: RegistryCheck[] = [];
  /** Tail of the queue of registry changes. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly store: Store,
    /** The gateway's resolved limits (server.ts), handed to every entry. */
    readonly limits: Readonly<GatewayLimits> = LIMITS,
  ) {}

  addCheck(check: RegistryCheck): void {
    this.checks.push(check);
  }

  entries(): ModelEntry[] {
    return [...this.byKey.values()];
  }

  find(group: string, version: string, plural: string): ModelEntry | undefined {
    return this.byKey.get(keyOf(group, version, plural));
  }

  /** The entry serving `apiVersion` + `kind` (how bundle documents name their type). */
  findByKind(apiVersion: string, kind: string): ModelEntry | undefined {
    for (const e of this.byKey.values()) if (e.model.apiVersion === apiVersion && e.model.kind === kind) return e;
    return undefined;
  }

  /** Models registered for `plugin`. */
  ofPlugin(plugin: string): ModelEntry[] {
    return this.entries().filter((e) => e.model.plugin === plugin);
  }

  onChange(listener: (change: RegistryChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Runs `fn` after every earlier registry change has finished (and before later ones). */
  private serialize<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  /**
   * Registers (or re-registers, for the same plugin) one model. Throws RegistrationError when
   * the declaration is invalid, the resource belongs to another plugin, or a check refuses it.
   */
  async register(decl: ModelDeclaration, opts: RegisterOptions = {}): Promise<ModelEntry> {
    const [entry] = await this.registerAll([decl], opts);
    return entry!;
  }

  /**
   * Registers a set of models all or nothing: when any declaration is refused or any model's
   * storage fails to open (e.g. a unique index over duplicate values), none is published and
   * earlier registrations stay as they were.
   */
  registerAll(decls: ModelDeclaration[], opts: RegisterOptions = {}): Promise<ModelEntry[]> {
    return this.serialize(async () => {
      const models = decls.map((d) => compileModel(d, opts));
      const replaced = new Set<ModelEntry>();
      const keys = new Set<string>();
      for (const model of models) {
        const key = keyOfModel(model);
        if (keys.has(key)) throw new RegistrationError(`${model.apiVersion} ${model.plural} is declared twice`);
        keys.add(key);
        const existing = this.byKey.get(key);
        if (existing && existing.model.plugin !== model.plugin) {
          throw new RegistrationError(
            `${model.apiVersion} ${model.plural} is already registered by ${existing.model.plugin ? `plugin "${existing.model.plugin}"` : 'the platform'}`,
          );
        }
        if (existing) replaced.add(existing);
      }
      const kept = [...this.byKey.values()].filter((e) => !replaced.has(e));
      const kinds = new Set<string>();
      for (const m of [...kept.map((e) => e.model), ...models]) {
        const k = `${m.apiVersion}\u0000${m.kind}`;
        if (kinds.has(k)) throw new RegistrationError(`kind ${m.kind} is already registered in ${m.apiVersion}`);
        kinds.add(k);
      }
      const next = [...kept.map((e) => e.model), ...models];
      for (const check of this.checks) {
        try {
          check(next, models);
        } catch (e) {
          throw new RegistrationError((e as Error).message);
        }
      }
      const entries: ModelEntry[] = [];
      for (const model of models) {
        const progress = opts.onProgress && ((p: IndexBuildProgress) => opts.onProgress!({ ...p, model: model.storage.key }));
        const store = await this.store.model(model.storage, progress);
        entries.push(opts.hooks ? { model, store, limits: this.limits, hooks: opts.hooks } : { model, store, limits: this.limits });
      }
      for (const e of entries) this.byKey.set(keyOfModel(e.model), e);
      this.emit({ removed: [] });
      return entries;
    });
  }

  /** Removes one model (its stored objects stay); its open watches end with ERROR 410. */
  unregister(group: string, version: string, plural: string): boolean {
    const entry = this.byKey.get(keyOf(group, version, plural));
    const removed = this.byKey.delete(keyOf(group, version, plural));
    if (removed) this.emit({ removed: [entry!] });
    return removed;
  }

  /**
   * Removes every model of `plugin` at once, after pending changes; returns what was removed.
   * Open watches of those models end with ERROR 410.
   */
  unregisterPlugin(plugin: string): Promise<ModelEntry[]> {
    return this.serialize(async () => {
      const gone = this.ofPlugin(plugin);
      for (const e of gone) this.byKey.delete(keyOfModel(e.model));
      if (gone.length) this.emit({ removed: gone, why: `plugin "${plugin}" stopped` });
      return gone;
    });
  }

  private emit(change: RegistryChange): void {
    for (const l of this.listeners) {
      try {
        l(change);
      } catch {
        // a listener's failure must not undo a registration
      }
    }
  }
}
