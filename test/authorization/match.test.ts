/** Rule matching, docs/API.md §6: every rule form, matching and not. */
import { describe, expect, it } from 'vitest';
import { grantedNames, nonResourceURLMatches, ruleAllows, type MatchRequest, type PolicyRule } from '../../src/authorization/match.js';

const res = (verb: string, resource: string, extra: Partial<MatchRequest> = {}): MatchRequest => ({
  verb,
  isResourceRequest: true,
  apiGroup: 'people.example.com',
  resource,
  subresource: '',
  name: '',
  path: '',
  plugin: 'people',
  ...extra,
});
const nonRes = (verb: string, path: string): MatchRequest => ({
  verb,
  isResourceRequest: false,
  apiGroup: '',
  resource: '',
  subresource: '',
  name: '',
  path,
});

const G = ['people.example.com'];

const table: [string, PolicyRule, MatchRequest, boolean][] = [
  // verbs
  ['exact verb', { apiGroups: G, resources: ['persons'], verbs: ['get'] }, res('get', 'persons', { name: 'a' }), true],
  ['other verb', { apiGroups: G, resources: ['persons'], verbs: ['get'] }, res('list', 'persons'), false],
  ['verb *', { apiGroups: G, resources: ['persons'], verbs: ['*'] }, res('deletecollection', 'persons'), true],
  ['no verbs', { apiGroups: G, resources: ['persons'], verbs: [] }, res('get', 'persons', { name: 'a' }), false],
  // groups
  ['group *', { apiGroups: ['*'], resources: ['persons'], verbs: ['list'] }, res('list', 'persons'), true],
  ['other group', { apiGroups: ['crm.example.net'], resources: ['persons'], verbs: ['list'] }, res('list', 'persons'), false],
  ['core group ""', { apiGroups: [''], resources: ['roles'], verbs: ['list'] }, res('list', 'roles', { apiGroup: '', plugin: undefined }), true],
  ['no apiGroups', { resources: ['persons'], verbs: ['list'] }, res('list', 'persons'), false],
  // resources
  ['plural', { apiGroups: G, resources: ['persons'], verbs: ['get'] }, res('get', 'persons', { name: 'a' }), true],
  ['plural does not cover its subresource', { apiGroups: G, resources: ['persons'], verbs: ['get'] }, res('get', 'persons', { name: 'a', subresource: 'status' }), false],
  ['plural/sub', { apiGroups: G, resources: ['persons/status'], verbs: ['update'] }, res('update', 'persons', { name: 'a', subresource: 'status' }), true],
  ['plural/sub does not cover the plural', { apiGroups: G, resources: ['persons/status'], verbs: ['update'] }, res('update', 'persons', { name: 'a' }), false],
  ['plural/other sub', { apiGroups: G, resources: ['persons/scale'], verbs: ['update'] }, res('update', 'persons', { name: 'a', subresource: 'status' }), false],
  ['* covers resources', { apiGroups: G, resources: ['*'], verbs: ['list'] }, res('list', 'persons'), true],
  ['* covers subresources', { apiGroups: G, resources: ['*'], verbs: ['get'] }, res('get', 'persons', { name: 'a', subresource: 'status' }), true],
  ['*/sub', { apiGroups: G, resources: ['*/status'], verbs: ['get'] }, res('get', 'persons', { name: 'a', subresource: 'status' }), true],
  ['*/sub does not cover the plural', { apiGroups: G, resources: ['*/status'], verbs: ['get'] }, res('get', 'persons', { name: 'a' }), false],
  ['plugin/plural', { apiGroups: G, resources: ['people/persons'], verbs: ['list'] }, res('list', 'persons'), true],
  ['plugin/plural of another plugin', { apiGroups: G, resources: ['crm/persons'], verbs: ['list'] }, res('list', 'persons'), false],
  ['plugin/plural, model of no plugin', { apiGroups: ['*'], resources: ['people/roles'], verbs: ['list'] }, res('list', 'roles', { apiGroup: '', plugin: undefined }), false],
  ['other plural', { apiGroups: G, resources: ['people'], verbs: ['list'] }, res('list', 'persons'), false],
  // resourceNames
  ['resourceNames contains the name', { apiGroups: G, resources: ['persons'], resourceNames: ['ada'], verbs: ['get'] }, res('get', 'persons', { name: 'ada' }), true],
  ['resourceNames lacks the name', { apiGroups: G, resources: ['persons'], resourceNames: ['ada'], verbs: ['get'] }, res('get', 'persons', { name: 'bob' }), false],
  ['resourceNames: update by name', { apiGroups: G, resources: ['persons'], resourceNames: ['ada'], verbs: ['*'] }, res('update', 'persons', { name: 'ada' }), true],
  ['resourceNames: delete by name', { apiGroups: G, resources: ['persons'], resourceNames: ['ada'], verbs: ['*'] }, res('delete', 'persons', { name: 'ada' }), true],
  ['resourceNames never allow create', { apiGroups: G, resources: ['persons'], resourceNames: ['ada'], verbs: ['*'] }, res('create', 'persons'), false],
  ['resourceNames never allow create, even named', { apiGroups: G, resources: ['persons'], resourceNames: ['ada'], verbs: ['create'] }, res('create', 'persons', { name: 'ada' }), false],
  ['resourceNames never allow list', { apiGroups: G, resources: ['persons'], resourceNames: ['ada'], verbs: ['*'] }, res('list', 'persons'), false],
  ['resourceNames never allow watch', { apiGroups: G, resources: ['persons'], resourceNames: ['ada'], verbs: ['watch'] }, res('watch', 'persons'), false],
  ['resourceNames never allow deletecollection', { apiGroups: G, resources: ['persons'], resourceNames: ['ada'], verbs: ['*'] }, res('deletecollection', 'persons'), false],
  ['empty resourceNames = all names', { apiGroups: G, resources: ['persons'], resourceNames: [], verbs: ['get'] }, res('get', 'persons', { name: 'x' }), true],
  ['resource rule vs non-resource request', { apiGroups: ['*'], resources: ['*'], verbs: ['*'] }, nonRes('get', '/metrics'), false],
  // nonResourceURLs
  ['exact URL', { nonResourceURLs: ['/healthz'], verbs: ['get'] }, nonRes('get', '/healthz'), true],
  ['exact URL, other verb', { nonResourceURLs: ['/healthz'], verbs: ['get'] }, nonRes('post', '/healthz'), false],
  ['exact URL, other path', { nonResourceURLs: ['/healthz'], verbs: ['get'] }, nonRes('get', '/healthz/x'), false],
  ['URL *', { nonResourceURLs: ['*'], verbs: ['*'] }, nonRes('delete', '/any/thing'), true],
  ['prefix/* below', { nonResourceURLs: ['/logs/*'], verbs: ['get'] }, nonRes('get', '/logs/a'), true],
  ['prefix/* deeper', { nonResourceURLs: ['/logs/*'], verbs: ['get'] }, nonRes('get', '/logs/a/b'), true],
  ['prefix/* not the prefix itself', { nonResourceURLs: ['/logs/*'], verbs: ['get'] }, nonRes('get', '/logs'), false],
  ['prefix/* not a sibling', { nonResourceURLs: ['/logs/*'], verbs: ['get'] }, nonRes('get', '/logsx'), false],
  ['non-resource rule vs resource request', { nonResourceURLs: ['*'], verbs: ['*'] }, res('get', 'persons', { name: 'a' }), false],
];

describe('ruleAllows (docs/API.md §6)', () => {
  it.each(table)('%s', (_label, rule, req, expected) => {
    expect(ruleAllows(rule, req)).toBe(expected);
  });

  it('nonResourceURLMatches: "prefix/*" matches strictly below the prefix', () => {
    expect(nonResourceURLMatches('/a/*', '/a/')).toBe(false);
    expect(nonResourceURLMatches('/a/*', '/a/b')).toBe(true);
    expect(nonResourceURLMatches('/a/b', '/a/b')).toBe(true);
    expect(nonResourceURLMatches('/a/b', '/a/b/')).toBe(false);
  });

  it('grantedNames lists names a resourceNames rule grants for a watch', () => {
    const rules: PolicyRule[] = [
      { apiGroups: G, resources: ['persons'], resourceNames: ['ada', 'bob'], verbs: ['get', 'watch'] },
      { apiGroups: G, resources: ['persons'], resourceNames: ['eve'], verbs: ['get'] },
    ];
    expect([...grantedNames(rules, res('watch', 'persons'))].sort()).toEqual(['ada', 'bob']);
    expect(grantedNames(rules, res('watch', 'people')).size).toBe(0);
  });
});
