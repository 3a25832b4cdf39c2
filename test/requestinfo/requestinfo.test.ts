import { describe, expect, it } from 'vitest';
import { malformedPath, parseRequestInfo, parseTarget } from '../../src/requestinfo/requestinfo.js';

describe('parseRequestInfo', () => {
  const cases: [string, string, Record<string, unknown>][] = [
    ['GET', '/apis/people.example.com/v1alpha1/persons', { isResourceRequest: true, verb: 'list', apiGroup: 'people.example.com', apiVersion: 'v1alpha1', resource: 'persons', name: '' }],
    ['GET', '/apis/people.example.com/v1alpha1/persons/ada', { verb: 'get', name: 'ada' }],
    ['GET', '/apis/people.example.com/v1alpha1/persons/ada/status', { verb: 'get', name: 'ada', subresource: 'status' }],
    ['POST', '/apis/people.example.com/v1alpha1/persons', { verb: 'create', name: '' }],
    ['POST', '/apis/people.example.com/v1alpha1/persons/-/import', { verb: 'create', name: '-', subresource: 'import' }],
    ['PUT', '/apis/g.example.com/v1/things/x', { verb: 'update', name: 'x' }],
    ['PATCH', '/apis/g.example.com/v1/things/x', { verb: 'patch' }],
    ['DELETE', '/apis/g.example.com/v1/things/x', { verb: 'delete', name: 'x' }],
    ['DELETE', '/apis/g.example.com/v1/things', { verb: 'deletecollection' }],
    ['GET', '/api/v1alpha1/roles', { isResourceRequest: true, apiPrefix: 'api', apiGroup: '', apiVersion: 'v1alpha1', resource: 'roles', verb: 'list' }],
    ['GET', '/api/v1alpha1/users/admin', { apiGroup: '', resource: 'users', name: 'admin', verb: 'get' }],
    ['GET', '/api/v1alpha1/users/a%2Db', { name: 'a-b' }],
    // too short / too long / foreign paths are non-resource requests with the lowercase method as verb
    ['GET', '/api/v1alpha1', { isResourceRequest: false, verb: 'get' }],
    ['GET', '/apis/g.example.com/v1', { isResourceRequest: false }],
    ['GET', '/apis/g/v1/r/n/s/extra', { isResourceRequest: false }],
    ['POST', '/healthz', { isResourceRequest: false, verb: 'post' }],
    ['GET', '/apis//v1/r', { isResourceRequest: false, malformed: expect.stringContaining('empty segment') }],
    ['GET', '/apis/g/v1/r/%E0%A4%A', { isResourceRequest: false, malformed: expect.stringContaining('percent') }],
    ['GET', '/', { isResourceRequest: false, verb: 'get' }],
    ['GET', '/apis/g/v1/r/..%2F', { isResourceRequest: true, name: '../' }],
  ];
  it.each(cases)('%s %s', (method, path, expected) => {
    expect(parseRequestInfo(method, path)).toMatchObject(expected);
  });

  it('reports watch for a collection GET when asked', () => {
    expect(parseRequestInfo('GET', '/apis/g.example.com/v1/things', { watch: true }).verb).toBe('watch');
    expect(parseRequestInfo('GET', '/apis/g.example.com/v1/things/x', { watch: true }).verb).toBe('get');
  });
});

describe('paths are taken as written (docs/API.md §4)', () => {
  const P = '/apis/people.example.com/v1alpha1/persons';
  // Each of these must never become the collection, an object or a route.
  const bad = [
    `${P}/`, `${P}/.`, `${P}/..`, `${P}/%2e`, `${P}/%2E`, `${P}/%2e%2e`, `${P}/.%2e`, `${P}/a/..`, `${P}/a/%2e%2e`,
    `${P}/./`, `${P}/a/.`, `${P}//a`, `${P}/a/`, `${P}/a/status/`, `${P}/a/./status`, `/apis/people.example.com/v1alpha1/./persons`,
    `/apis/people.example.com/v1alpha1/persons/x/../../persons`, `//apis/people.example.com/v1alpha1/persons`,
    '/api/v1alpha1/users/', '/api/v1alpha1/users/%2e', '/api/v1alpha1/users/..', '/graphql/', '/healthz/.',
  ];
  const methods = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
  it.each(bad.flatMap((path) => methods.map((m) => [m, path] as const)))('%s %s is malformed', (method, path) => {
    const info = parseRequestInfo(method, path, { watch: method === 'GET' });
    expect(info.isResourceRequest).toBe(false);
    expect(info.malformed).toBeTruthy();
    expect(info.verb).not.toBe('deletecollection');
  });

  it('keeps names that merely contain dots', () => {
    expect(parseRequestInfo('DELETE', `${P}/a.b`)).toMatchObject({ verb: 'delete', name: 'a.b' });
    expect(parseRequestInfo('DELETE', `${P}/...`)).toMatchObject({ verb: 'delete', name: '...' });
    expect(malformedPath(`${P}/.hidden`)).toBeUndefined();
  });

  it('parseTarget neither normalises dot segments nor decodes the path', () => {
    expect(parseTarget(`${P}/%2e?size=1`)).toMatchObject({ pathname: `${P}/%2e` });
    expect(parseTarget(`${P}/a/..?x=1#f`).pathname).toBe(`${P}/a/..`);
    expect(parseTarget(`${P}?labelSelector=a%3Db`).searchParams.get('labelSelector')).toBe('a=b');
    expect(parseTarget('').pathname).toBe('/');
  });
});

it('the root path is a well-formed non-resource path', () => {
  expect(malformedPath('/')).toBeUndefined();
  expect(parseRequestInfo('GET', '/').malformed).toBeUndefined();
});
