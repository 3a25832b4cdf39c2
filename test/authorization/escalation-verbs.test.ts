/**
 * docs/API.md §6 "No escalation", as pure functions: `*` in a rule's verbs grants neither
 * `escalate`, `bind` nor `impersonate` (match.ts), and holding `*` does not count as holding them
 * when a role or binding is checked (admission.ts `covers`); the built-in templates name their
 * verbs and only super-role names the three.
 */
import { describe, expect, it } from 'vitest';
import { covers } from '../../src/authorization/admission.js';
import { BUILTIN_ROLES } from '../../src/authorization/builtin-roles.js';
import { ESCALATION_VERBS, ruleAllows, type MatchRequest } from '../../src/authorization/match.js';

const on = (verb: string, resource: string): MatchRequest => ({
  verb,
  isResourceRequest: true,
  apiGroup: '',
  resource,
  subresource: '',
  name: 'x',
  path: '',
});

describe('escalation verbs', () => {
  it('`*` grants every ordinary verb but not escalate, bind or impersonate', () => {
    const star = { apiGroups: ['*'], resources: ['*'], verbs: ['*'] };
    for (const verb of ['get', 'update', 'delete', 'deletecollection']) expect(ruleAllows(star, on(verb, 'roles')), verb).toBe(true);
    for (const verb of ['escalate', 'bind', 'impersonate']) {
      expect(ruleAllows(star, on(verb, verb === 'impersonate' ? 'users' : 'roles')), verb).toBe(false);
      expect(ruleAllows({ ...star, verbs: [verb] }, on(verb, 'roles')), `${verb} named`).toBe(true);
    }
  });

  it('holding `*` does not cover a rule that names escalate, bind or impersonate', () => {
    const held = [{ apiGroups: [''], resources: ['roles', 'users'], verbs: ['*'] }];
    expect(covers(held, { apiGroups: [''], resources: ['roles'], verbs: ['*'] })).toBe(true);
    expect(covers(held, { apiGroups: [''], resources: ['roles'], verbs: ['update', 'delete'] })).toBe(true);
    for (const verb of ESCALATION_VERBS) {
      expect(covers(held, { apiGroups: [''], resources: ['roles'], verbs: [verb] }), verb).toBe(false);
      expect(covers([{ apiGroups: [''], resources: ['roles'], verbs: [verb] }], { apiGroups: [''], resources: ['roles'], verbs: [verb] })).toBe(true);
    }
  });

  it('built-in roles: no `*` verbs in the templates; super-role names the three', () => {
    for (const role of BUILTIN_ROLES) {
      if (role.metadata.name === 'super-role') continue;
      for (const rule of role.rules) expect(rule.verbs, role.metadata.name).not.toContain('*');
    }
    const superRole = BUILTIN_ROLES.find((r) => r.metadata.name === 'super-role')!;
    for (const verb of ESCALATION_VERBS) expect(superRole.rules.some((r) => ruleAllows(r, on(verb, 'users'))), verb).toBe(true);
  });
});
