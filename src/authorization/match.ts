/**
 * Rule matching, exactly as docs/API.md §6 (k8s plugin/pkg/auth/authorizer/rbac/rbac.go RuleAllows).
 *
 * A resource rule allows a resource request when all of these match:
 *   - verbs: the verb, or `*`; but `*` never grants `escalate`, `bind` or `impersonate`
 *     (ESCALATION_VERBS): they lift the no-escalation checks of admission.ts, so a rule must name
 *     them (super-role does; a `*` written for "manage everything" must not hand them out);
 *   - apiGroups: the group, or `*`;
 *   - resources: `plural` (the resource itself, no subresource), `plural/sub`, `*` (everything,
 *     subresources included), `* /sub` (that subresource of any resource), or
 *     `<plugin_name>/<plural>` (a plugin's own model, no subresource);
 *   - resourceNames: empty, or it contains the name; a rule with names never allows create,
 *     list, watch or deletecollection.
 * A non-resource rule allows a non-resource request when the verb matches and a
 * nonResourceURLs entry is the exact path, `*`, or `prefix/*` (strictly below the prefix).
 */

export interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
  verbs: string[];
}

export interface MatchRequest {
  verb: string;
  isResourceRequest: boolean;
  apiGroup: string;
  resource: string;
  subresource: string;
  name: string;
  path: string;
  /** The plugin that declared the addressed model, when known. */
  plugin?: string;
}

/** Verbs a resourceNames rule can never grant: they do not address one named object. */
export const COLLECTION_VERBS: ReadonlySet<string> = new Set(['create', 'list', 'watch', 'deletecollection']);

/** Verbs `*` does not grant: each lifts a no-escalation check (docs/API.md §6), so it must be named. */
export const ESCALATION_VERBS: ReadonlySet<string> = new Set(['escalate', 'bind', 'impersonate']);

const has = (list: readonly string[] | undefined, v: string) => !!list && (list.includes('*') || list.includes(v));

/** Does a verbs list grant `verb`? `verb` may itself be `*` (all ordinary verbs), as in a rule being checked. */
export function verbsGrant(verbs: readonly string[] | undefined, verb: string): boolean {
  if (!verbs) return false;
  return verbs.includes(verb) || (verbs.includes('*') && !ESCALATION_VERBS.has(verb));
}

export function verbMatches(rule: PolicyRule, verb: string): boolean {
  return verbsGrant(rule.verbs, verb);
}

export function resourceMatches(entry: string, req: Pick<MatchRequest, 'resource' | 'subresource' | 'plugin'>): boolean {
  if (entry === '*') return true;
  const slash = entry.indexOf('/');
  if (slash < 0) return req.subresource === '' && entry === req.resource;
  const left = entry.slice(0, slash);
  const right = entry.slice(slash + 1);
  if (right === '' || right.includes('/')) return false;
  if (left === '*') return req.subresource !== '' && req.subresource === right;
  if (req.subresource !== '') return left === req.resource && right === req.subresource;
  return req.plugin !== undefined && left === req.plugin && right === req.resource;
}

export function nonResourceURLMatches(entry: string, path: string): boolean {
  if (entry === '*' || entry === path) return true;
  if (!entry.endsWith('/*')) return false;
  const prefix = entry.slice(0, -1); // keeps the trailing "/"
  return path.length > prefix.length && path.startsWith(prefix);
}

/** Does `rule` allow `req`, ignoring resourceNames (see `ruleAllows`)? */
function allowsIgnoringNames(rule: PolicyRule, req: MatchRequest): boolean {
  if (!verbMatches(rule, req.verb)) return false;
  if (!req.isResourceRequest) return (rule.nonResourceURLs ?? []).some((u) => nonResourceURLMatches(u, req.path));
  if (!rule.resources?.length || !has(rule.apiGroups, req.apiGroup)) return false;
  return rule.resources.some((r) => resourceMatches(r, req));
}

export function ruleAllows(rule: PolicyRule, req: MatchRequest): boolean {
  if (!allowsIgnoringNames(rule, req)) return false;
  if (!req.isResourceRequest) return true;
  const names = rule.resourceNames ?? [];
  if (names.length === 0) return true;
  if (COLLECTION_VERBS.has(req.verb)) return false;
  return names.includes(req.name);
}

export const rulesAllow = (rules: readonly PolicyRule[], req: MatchRequest): boolean => rules.some((r) => ruleAllows(r, req));

/**
 * The names that rules with resourceNames grant for `req` as if it addressed each object by
 * name (used to open a watch restricted to those objects). Empty when none do.
 */
export function grantedNames(rules: readonly PolicyRule[], req: MatchRequest): Set<string> {
  const out = new Set<string>();
  if (!req.isResourceRequest) return out;
  for (const rule of rules) {
    if (!rule.resourceNames?.length || !allowsIgnoringNames(rule, req)) continue;
    for (const n of rule.resourceNames) out.add(n);
  }
  return out;
}
