import { describe, expect, it } from 'vitest';
import { parseRequestInfo } from '../../src/request/requestinfo.js';

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
    ['GET', '/api/v1alpha1/persons/', { isResourceRequest: true, resource: 'persons', verb: 'list' }],
    ['GET', '/api/v1alpha1/users/a%2Db', { name: 'a-b' }],
    // too short / too long / foreign paths are non-resource requests with the lowercase method as verb
    ['GET', '/api/v1alpha1', { isResourceRequest: false, verb: 'get' }],
    ['GET', '/apis/g.example.com/v1', { isResourceRequest: false }],
    ['GET', '/apis/g/v1/r/n/s/extra', { isResourceRequest: false }],
    ['POST', '/healthz', { isResourceRequest: false, verb: 'post' }],
    ['GET', '/apis//v1/r', { isResourceRequest: false }],
    ['GET', '/apis/g/v1/r/%E0%A4%A', { isResourceRequest: false }],
  ];
  it.each(cases)('%s %s', (method, path, expected) => {
    expect(parseRequestInfo(method, path)).toMatchObject(expected);
  });

  it('reports watch for a collection GET when asked', () => {
    expect(parseRequestInfo('GET', '/apis/g.example.com/v1/things', { watch: true }).verb).toBe('watch');
    expect(parseRequestInfo('GET', '/apis/g.example.com/v1/things/x', { watch: true }).verb).toBe('get');
  });
});
