/**
 * The audit log (docs/API.md §10), modelled on the Kubernetes audit event at stage ResponseComplete:
 * with SVC_AUDIT_LOG=<file> (`-`: stdout), one JSON line per write (create, update, patch,
 * delete, deletecollection, and POST/PUT/PATCH/DELETE on other paths such as custom routes) and
 * per denied request (401, 403), through REST, GraphQL (each mutation field, each denied field),
 * watches and custom routes. A line holds metadata only: never a body, a header or a query
 * parameter that could carry a secret.
 *
 * SVC_AUDIT_POLICY=<yaml file> chooses the level per request, as Kubernetes' audit policy does:
 *   rules:
 *     - level: None                      # None: no line; Metadata: the line above
 *       resources: [{group: "", resources: [users, roles]}]
 *       verbs: [get, list]                # optional
 *       users: [ci-bot]                   # optional
 *     - level: None
 *       nonResourceURLs: ["/metrics"]
 * The first rule that matches decides; without a match (or a policy) the level is Metadata.
 */
import { randomUUID } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { load } from 'js-yaml';
import { destination } from 'pino';

export interface AuditObjectRef {
  apiGroup: string;
  apiVersion: string;
  resource: string;
  name: string;
  subresource: string;
}

export interface AuditEvent {
  auditID: string;
  stage: 'ResponseComplete';
  verb: string;
  user: { username: string };
  sourceIPs: string[];
  objectRef?: AuditObjectRef;
  requestURI: string;
  responseStatus: { code: number };
  requestReceivedTimestamp: string;
  stageTimestamp: string;
}

/** What a request tells the audit log; the log adds the ID and the stage timestamp. */
export type AuditRecord = Omit<AuditEvent, 'auditID' | 'stage' | 'stageTimestamp'>;

export type AuditLevel = 'None' | 'Metadata';

interface PolicyRule {
  level: AuditLevel;
  verbs?: string[];
  users?: string[];
  resources?: { group?: string; resources?: string[] }[];
  nonResourceURLs?: string[];
}

export const WRITE_VERBS: ReadonlySet<string> = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);
/** Methods that write, for requests outside the resource paths (custom routes). */
export const WRITE_METHODS: ReadonlySet<string> = new Set(['post', 'put', 'patch', 'delete']);

/** Parses and checks an audit policy (YAML text); throws naming what is wrong. */
export function parsePolicy(text: string, source = 'audit policy'): PolicyRule[] {
  const doc = load(text) as { rules?: unknown } | null | undefined;
  if (!doc || typeof doc !== 'object' || !Array.isArray(doc.rules)) throw new Error(`${source}: expected a mapping with a "rules" list`);
  const strings = (v: unknown, where: string): string[] | undefined => {
    if (v === undefined) return undefined;
    if (!Array.isArray(v) || v.some((s) => typeof s !== 'string')) throw new Error(`${source}: ${where} must be a list of strings`);
    return v as string[];
  };
  return doc.rules.map((r: unknown, i: number): PolicyRule => {
    const where = `rules[${i}]`;
    if (!r || typeof r !== 'object') throw new Error(`${source}: ${where} must be a mapping`);
    const rule = r as Record<string, unknown>;
    const known = new Set(['level', 'verbs', 'users', 'resources', 'nonResourceURLs']);
    for (const key of Object.keys(rule)) if (!known.has(key)) throw new Error(`${source}: ${where}.${key} is not a policy field (${[...known].join(', ')})`);
    if (rule.level !== 'None' && rule.level !== 'Metadata') throw new Error(`${source}: ${where}.level must be None or Metadata`);
    let resources: PolicyRule['resources'];
    if (rule.resources !== undefined) {
      if (!Array.isArray(rule.resources)) throw new Error(`${source}: ${where}.resources must be a list`);
      resources = rule.resources.map((g: unknown, j: number) => {
        if (!g || typeof g !== 'object') throw new Error(`${source}: ${where}.resources[${j}] must be a mapping`);
        const { group, resources: names } = g as { group?: unknown; resources?: unknown };
        if (group !== undefined && typeof group !== 'string') throw new Error(`${source}: ${where}.resources[${j}].group must be a string`);
        return { group, resources: strings(names, `${where}.resources[${j}].resources`) };
      });
    }
    return {
      level: rule.level,
      verbs: strings(rule.verbs, `${where}.verbs`),
      users: strings(rule.users, `${where}.users`),
      resources,
      nonResourceURLs: strings(rule.nonResourceURLs, `${where}.nonResourceURLs`),
    };
  });
}

const urlMatches = (entry: string, path: string) =>
  entry === '*' || entry === path || (entry.endsWith('/*') && path.startsWith(entry.slice(0, -1)));

function ruleMatches(rule: PolicyRule, r: AuditRecord, path: string): boolean {
  if (rule.verbs && !rule.verbs.includes('*') && !rule.verbs.includes(r.verb)) return false;
  if (rule.users && !rule.users.includes(r.user.username)) return false;
  if (rule.resources || rule.nonResourceURLs) {
    const ref = r.objectRef;
    if (ref) {
      if (!rule.resources) return false;
      return rule.resources.some((g) => {
        if (g.group !== undefined && g.group !== '*' && g.group !== ref.apiGroup) return false;
        if (!g.resources) return true;
        const full = ref.subresource ? `${ref.resource}/${ref.subresource}` : ref.resource;
        return g.resources.some((n) => n === '*' || n === full || (!ref.subresource && n === ref.resource) || n === `${ref.resource}/*`);
      });
    }
    return !!rule.nonResourceURLs?.some((u) => urlMatches(u, path));
  }
  return true;
}

export interface AuditLog {
  /** Writes one line for `record` unless the policy says None. */
  write(record: AuditRecord): void;
  close(): void;
}

export interface AuditOptions {
  /** `-` for stdout, else a file appended to. */
  destination: string;
  /** Policy rules (parsePolicy), first match wins; none: everything at Metadata. */
  policy?: PolicyRule[];
  /** Told when writing fails later (e.g. the disk is full); default: ignored. */
  onError?: (err: Error) => void;
}

/** Opens the audit log (the policy file is read and checked here: a bad one fails the start). */
export function openAuditLog(o: { path: string; policyFile?: string; onError?: (err: Error) => void }): AuditLog {
  const policy = o.policyFile ? parsePolicy(readFileSync(o.policyFile, 'utf8'), o.policyFile) : undefined;
  if (o.path !== '-') {
    // Opened once here so that a path that cannot be written fails the start with its name.
    try {
      mkdirSync(dirname(o.path), { recursive: true });
      closeSync(openSync(o.path, 'a'));
    } catch (e) {
      throw new Error(`SVC_AUDIT_LOG: cannot open ${o.path} for appending (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
    }
  }
  return createAuditLog({ destination: o.path, policy, onError: o.onError });
}

export function createAuditLog(o: AuditOptions): AuditLog {
  const out = o.destination === '-' ? destination({ dest: 1, sync: false }) : destination({ dest: o.destination, sync: false, mkdir: true, append: true });
  const rules = o.policy ?? [];
  let closed = false;
  out.on('error', (err: Error) => o.onError?.(err));
  return {
    write(record) {
      if (closed) return;
      const path = record.requestURI.split('?')[0]!;
      const rule = rules.find((r) => ruleMatches(r, record, path));
      if (rule?.level === 'None') return;
      const event: AuditEvent = {
        auditID: randomUUID(),
        stage: 'ResponseComplete',
        verb: record.verb,
        user: { username: record.user.username },
        sourceIPs: record.sourceIPs,
        ...(record.objectRef ? { objectRef: record.objectRef } : {}),
        requestURI: record.requestURI,
        responseStatus: { code: record.responseStatus.code },
        requestReceivedTimestamp: record.requestReceivedTimestamp,
        stageTimestamp: new Date().toISOString(),
      };
      out.write(`${JSON.stringify(event)}\n`);
    },
    close() {
      if (closed) return;
      closed = true;
      if (o.destination === '-') out.flush?.();
      else out.end();
    },
  };
}
