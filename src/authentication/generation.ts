/**
 * The security generation: a counter that moves whenever a Role, RoleBinding, User or personal
 * access token changes. Authentication and authorization caches remember the generation they
 * were filled at and drop everything when it moves.
 *
 * - A change through this gateway bumps it at once (the write's hook awaits `bump`).
 * - Other gateways on the same database learn of it from one small marker object
 *   (`security.svc.run/v1alpha1/securitygenerations/rbac`) whose metadata.version every bump
 *   increments: they watch its model's change feed, so a bump reaches them like any watch
 *   event (on MongoDB within the store's change-hint interval) and an idle gateway sends no
 *   command of its own for it (it used to read the marker every 250 ms). A lost watch moves
 *   the generation (caches drop: a bump may have been missed) and is opened again.
 */
import type { Logger } from 'pino';
import { compileModel } from '../registry/compile.js';
import { isStoreError } from '../store/errors.js';
import type { ModelStore, Store } from '../store/types.js';

const MARKER = 'rbac';
export const GENERATION_POLL_MS = 250;

const MARKER_MODEL = compileModel(
  { group: 'security.svc.run', version: 'v1alpha1', kind: 'SecurityGeneration' },
  { platform: true },
);

export class SecurityGeneration {
  private counter = 0;
  private remote: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  private polling = false;
  private unwatch: (() => void) | undefined;
  private stopped = false;
  private retryMs = GENERATION_POLL_MS;
  private readonly listeners = new Set<() => void>();

  private constructor(
    private readonly marker: ModelStore | undefined,
    private readonly log?: Logger,
  ) {}

  /** A generation shared through `store` (polled every `pollMs`); without a store, local only. */
  static async open(store: Store | undefined, opts: { log?: Logger; pollMs?: number } = {}): Promise<SecurityGeneration> {
    const marker = store ? await store.model(MARKER_MODEL.storage) : undefined;
    const gen = new SecurityGeneration(marker, opts.log);
    if (marker) {
      gen.remote = await gen.read();
      gen.retryMs = opts.pollMs ?? GENERATION_POLL_MS;
      await gen.follow();
    }
    return gen;
  }

  /** The current generation; compare with the value a cache was filled at. */
  get value(): number {
    return this.counter;
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Records a change: local caches drop now, other gateways at their next poll. */
  async bump(): Promise<void> {
    this.advance();
    if (!this.marker) return;
    try {
      this.remote = await this.increment(this.marker);
    } catch (e) {
      this.log?.warn({ err: (e as Error).message }, 'could not publish the security generation');
    }
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.unwatch?.();
    this.unwatch = undefined;
  }

  /** Watches the marker's model; on a lost or failed watch: moves, and watches again later. */
  private async follow(): Promise<void> {
    if (this.stopped) return;
    try {
      this.unwatch = await this.marker!.watch(
        undefined,
        (e) => {
          if (e.object.metadata.name === MARKER && e.object.metadata.version !== this.remote) {
            this.remote = e.object.metadata.version;
            this.advance();
          }
        },
        () => {
          this.unwatch = undefined;
          this.advance();
          this.again();
        },
      );
      // A bump between the read above (or the lost watch) and the watch's start.
      void this.poll();
    } catch {
      this.again();
    }
  }

  private again(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.follow(), this.retryMs);
    this.timer.unref();
  }

  private advance(): void {
    this.counter += 1;
    for (const l of this.listeners) l();
  }

  private async read(): Promise<number | undefined> {
    const obj = await this.marker!.get(MARKER);
    return obj?.metadata.version;
  }

  private async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      const v = await this.read();
      if (v !== this.remote) {
        this.remote = v;
        this.advance();
      }
    } catch {
      // the store is unreachable: keep the caches; the next poll tries again
    } finally {
      this.polling = false;
    }
  }

  private async increment(marker: ModelStore): Promise<number> {
    for (let attempt = 0; ; attempt++) {
      const old = await marker.get(MARKER);
      try {
        if (!old) {
          const created = await marker.create({
            apiVersion: MARKER_MODEL.apiVersion,
            kind: MARKER_MODEL.kind,
            metadata: { name: MARKER, version: 1, creationTimestamp: new Date().toISOString() },
          });
          return created.metadata.version!;
        }
        const version = (old.metadata.version ?? 0) + 1;
        const next = await marker.update({ ...old, metadata: { ...old.metadata, version } }, old.metadata.version ?? 0);
        return next.metadata.version!;
      } catch (e) {
        if (attempt < 20 && (isStoreError(e, 'Conflict') || isStoreError(e, 'AlreadyExists') || isStoreError(e, 'NotFound'))) continue;
        throw e;
      }
    }
  }
}
