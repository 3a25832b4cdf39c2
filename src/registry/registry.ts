/**
 * The set of registered models and their storage. Registering compiles the declaration, opens
 * the model's storage (which builds its indexes over existing objects) and only then publishes
 * the model, so nothing is served before its indexes exist. Listeners (GraphQL schema swap)
 * are told after every change.
 */
import type { ModelEntry } from '../operations/types.js';
import type { IndexBuildProgress, Store } from '../store/types.js';
import { compileModel, RegistrationError, type CompileOptions } from './compile.js';
import type { Model, ModelDeclaration } from './model.js';

export { RegistrationError };

/** Extra checks over the whole set of models (e.g. GraphQL name clashes); throw to refuse. */
export type RegistryCheck = (models: Model[]) => void;

const keyOf = (group: string, version: string, plural: string) => `${group}\u0000${version}\u0000${plural}`;

export class Registry {
  private readonly byKey = new Map<string, ModelEntry>();
  private readonly listeners = new Set<() => void>();
  private readonly checks: RegistryCheck[] = [];

  constructor(private readonly store: Store) {}

  addCheck(check: RegistryCheck): void {
    this.checks.push(check);
  }

  entries(): ModelEntry[] {
    return [...this.byKey.values()];
  }

  find(group: string, version: string, plural: string): ModelEntry | undefined {
    return this.byKey.get(keyOf(group, version, plural));
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Registers (or re-registers, for the same plugin) a model. Throws RegistrationError when the
   * declaration is invalid, the resource belongs to another plugin, or a check refuses it.
   */
  async register(
    decl: ModelDeclaration,
    opts: CompileOptions & { onProgress?: (p: IndexBuildProgress) => void } = {},
  ): Promise<ModelEntry> {
    const model = compileModel(decl, opts);
    const key = keyOf(model.group, model.version, model.plural);
    const existing = this.byKey.get(key);
    if (existing && existing.model.plugin !== model.plugin) {
      throw new RegistrationError(
        `${model.apiVersion} ${model.plural} is already registered by ${existing.model.plugin ? `plugin "${existing.model.plugin}"` : 'the platform'}`,
      );
    }
    for (const e of this.byKey.values()) {
      if (e === existing) continue;
      if (e.model.group === model.group && e.model.version === model.version && e.model.kind === model.kind) {
        throw new RegistrationError(`kind ${model.kind} is already registered in ${model.apiVersion}`);
      }
    }
    const next = [...this.byKey.values()].filter((e) => e !== existing).map((e) => e.model);
    next.push(model);
    for (const check of this.checks) {
      try {
        check(next);
      } catch (e) {
        throw new RegistrationError((e as Error).message);
      }
    }
    const store = await this.store.model(model.storage, opts.onProgress);
    const entry: ModelEntry = { model, store };
    this.byKey.set(key, entry);
    this.emit();
    return entry;
  }

  unregister(group: string, version: string, plural: string): boolean {
    const removed = this.byKey.delete(keyOf(group, version, plural));
    if (removed) this.emit();
    return removed;
  }

  private emit(): void {
    for (const l of this.listeners) l();
  }
}
