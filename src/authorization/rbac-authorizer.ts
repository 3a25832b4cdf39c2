/**
 * The gateway's Authorizer: role-based access control over stored Roles and RoleBindings.
 *
 * Decisions are remembered per (caller, attributes), and role resolutions per caller, so a
 * repeated decision costs a map lookup. Everything remembered is dropped when the security
 * generation moves (authentication/generation.ts): at once for a change through this gateway, within one
 * poll interval for a change through another gateway on the same database.
 */
import type { SecurityGeneration } from '../authentication/generation.js';
import type { Caller } from '../identity/caller.js';
import { Unavailable } from '../errors/index.js';
import type { ApiObject } from '../store/object.js';
import { isStoreError } from '../store/errors.js';
import type { ModelStore, StoreQuery } from '../store/types.js';
import type { Attributes, Authorizer, Decision } from '../identity/authorizer.js';
import { grantedNames, rulesAllow, type MatchRequest } from './match.js';
import {
  aggregateLabel,
  annotationList,
  ANNOTATION_UI_PERMISSIONS,
  directRoles,
  overlaySource,
  resolveRoles,
  SUPER_ROLE,
  type ResolvedRoles,
  type RoleSource,
} from './resolve.js';

export interface RbacDeps {
  /** Raw storage of roles and rolebindings (looked up on each use: models may be re-registered). */
  roles(): ModelStore;
  bindings(): ModelStore;
  generation: Pick<SecurityGeneration, 'value'>;
  /** The plugin that declared a model, for `<plugin_name>/<plural>` rules. */
  pluginOf(group: string, version: string, resource: string): string | undefined;
}

const MAX_DECISIONS = 100_000;
const MAX_CALLERS = 20_000;

const byName = (where: StoreQuery['where']): StoreQuery => ({ where, sort: [{ index: 'metadata.name', direction: 'asc' }], offset: 0 });

const callerKey = (c: Caller) => `${c.authenticated ? 'u' : 'a'}:${c.username}`;

function attributesKey(a: Attributes): string {
  return [callerKey(a.caller), a.verb, a.isResourceRequest ? 'r' : 'n', a.apiGroup, a.apiVersion, a.resource, a.subresource, a.name, a.isResourceRequest ? '' : a.path].join('\u0000');
}

async function guard<T>(p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (e) {
    if (isStoreError(e, 'Unavailable')) throw Unavailable.fromStore(e.timeoutMs);
    throw e;
  }
}

export class RbacAuthorizer implements Authorizer {
  private at: number;
  private decisions = new Map<string, Decision>();
  private resolutions = new Map<string, Promise<ResolvedRoles>>();
  private roleObjects = new Map<string, Promise<ApiObject | undefined>>();
  private aggregates = new Map<string, Promise<ApiObject[]>>();

  /** Reads roles and bindings from the store, remembering them for the current generation. */
  readonly source: RoleSource;

  constructor(private readonly deps: RbacDeps) {
    this.at = deps.generation.value;
    this.source = {
      role: (name) => this.memo(this.roleObjects, name, async () => (await this.deps.roles().get(name)) ?? undefined),
      aggregatedInto: (name) =>
        this.memo(this.aggregates, name, async () => {
          const label = `${aggregateLabel(name)}=true`;
          const { items } = await this.deps.roles().list(byName([{ index: 'metadata.labels', op: 'in', values: [label] }]));
          return items;
        }),
      boundRoles: async (username) => {
        const { items } = await this.deps.bindings().list(byName([{ index: 'subjects.name', op: 'in', values: [username] }]));
        const out: string[] = [];
        for (const b of items) {
          if (b.metadata.deletionTimestamp) continue;
          const subjects = Array.isArray(b.subjects) ? (b.subjects as { kind?: string; name?: string }[]) : [];
          const ref = b.roleRef as { kind?: string; name?: string } | undefined;
          if (ref?.name && subjects.some((s) => s.kind === 'User' && s.name === username)) out.push(ref.name);
        }
        return out;
      },
    };
  }

  private fresh(): void {
    if (this.deps.generation.value === this.at) return;
    this.at = this.deps.generation.value;
    this.decisions = new Map();
    this.resolutions = new Map();
    this.roleObjects = new Map();
    this.aggregates = new Map();
  }

  private memo<T>(map: Map<string, Promise<T>>, key: string, load: () => Promise<T>): Promise<T> {
    let p = map.get(key);
    if (!p) {
      if (map.size >= MAX_CALLERS) map.clear();
      p = load();
      map.set(key, p);
      p.catch(() => map.delete(key));
    }
    return p;
  }

  /** Every role the caller holds after resolution, its rules and UI permissions. */
  resolve(caller: Caller): Promise<ResolvedRoles> {
    this.fresh();
    return guard(this.memo(this.resolutions, callerKey(caller), async () => resolveRoles(this.source, await directRoles(this.source, caller))));
  }

  /** What one role grants after its own dependencies and aggregation; `candidate` replaces the stored object. */
  resolveRole(name: string, candidate?: ApiObject): Promise<ResolvedRoles> {
    return this.resolveWith([name], candidate ? [candidate] : []);
  }

  /** What the roles `start` grant to a fixpoint, with `candidates` written over the stored roles. */
  resolveWith(start: readonly string[], candidates: readonly ApiObject[]): Promise<ResolvedRoles> {
    this.fresh();
    return guard(resolveRoles(overlaySource(this.source, candidates), start));
  }

  /** `{roles, uiPermissions}` of a caller (the permissions endpoint and GraphQL `me`). */
  async describe(caller: Caller): Promise<{ roles: string[]; uiPermissions: string[] }> {
    const { roles, uiPermissions } = await this.resolve(caller);
    if (!roles.includes(SUPER_ROLE)) return { roles, uiPermissions };
    // The super administrator holds every UI permission: `*` and each one any role names.
    const all = new Set(['*', ...uiPermissions]);
    const { items } = await guard(this.deps.roles().list(byName([])));
    for (const r of items) if (!r.metadata.deletionTimestamp) for (const p of annotationList(r, ANNOTATION_UI_PERMISSIONS)) all.add(p);
    return { roles, uiPermissions: [...all] };
  }

  matchRequest(attrs: Attributes): MatchRequest {
    const plugin = attrs.isResourceRequest ? this.deps.pluginOf(attrs.apiGroup, attrs.apiVersion, attrs.resource) : undefined;
    return { ...attrs, plugin };
  }

  async authorize(attrs: Attributes): Promise<Decision> {
    this.fresh();
    const key = attributesKey(attrs);
    const known = this.decisions.get(key);
    if (known) return known;
    const at = this.at;
    const { rules } = await this.resolve(attrs.caller);
    const req = this.matchRequest(attrs);
    let decision: Decision;
    if (rulesAllow(rules, req)) {
      decision = { allowed: true, reason: 'allowed by role rules' };
    } else {
      decision = { allowed: false, reason: 'no rule allows the request' };
      if (attrs.verb === 'watch' && attrs.name === '') {
        const names = grantedNames(rules, req);
        if (names.size) decision.names = names;
      }
    }
    Object.freeze(decision);
    if (at === this.deps.generation.value) {
      if (this.decisions.size >= MAX_DECISIONS) this.decisions.clear();
      this.decisions.set(key, decision);
    }
    return decision;
  }
}
