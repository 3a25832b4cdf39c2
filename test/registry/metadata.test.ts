import { describe, expect, it } from 'vitest';
import {
  checkFinalizers,
  checkGenerateName,
  checkLabels,
  checkObjectName,
  checkPluginKey,
  generateName,
} from '../../src/registry/metadata.js';

describe('metadata rules', () => {
  it.each(['a', 'a-b', '0', 'x'.repeat(253), 'abc-123'])('accepts the name %s', (n) => {
    expect(checkObjectName(n)).toEqual([]);
  });
  it.each(['', 'A', '-a', 'a-', 'a.b', 'a_b', 'x'.repeat(254), 'é'])('refuses the name "%s"', (n) => {
    expect(checkObjectName(n)).toHaveLength(1);
  });
  it('refuses a missing or non-string name', () => {
    expect(checkObjectName(undefined)[0]!.message).toBe('is required');
    expect(checkObjectName(3)).toHaveLength(1);
  });
  it('generates names from a prefix', () => {
    expect(generateName('web-')).toMatch(/^web-[a-z0-9]{5}$/);
    expect(checkGenerateName('web-')).toEqual([]);
    expect(checkGenerateName('Web')).toHaveLength(1);
    expect(checkGenerateName('x'.repeat(249))).toHaveLength(1);
  });
  it('checks label keys and values', () => {
    expect(checkLabels({ a: '', 'a.example.com/b_c.d-e': 'V.1_x-y', ['p'.repeat(63)]: 'v'.repeat(63) })).toEqual([]);
    const bad = checkLabels({
      '/a': 'v',
      'UPPER.example/a': 'v',
      ['p'.repeat(64)]: 'v',
      a: 'v'.repeat(64),
      b: '-v',
      c: 'v v',
      'a/b/c': 'v',
    });
    expect(bad.length).toBeGreaterThanOrEqual(7);
    expect(checkLabels('nope')).toHaveLength(1);
    expect(checkLabels({ a: 3 })).toHaveLength(1);
  });
  it('checks finalizers', () => {
    expect(checkFinalizers(['example.com/cleanup', 'simple'])).toEqual([]);
    expect(checkFinalizers(['bad finalizer'])).toHaveLength(1);
    expect(checkFinalizers('x')).toHaveLength(1);
  });
  it('keeps plugin keys out of svc.run, except the documented platform keys', () => {
    expect(checkPluginKey('plugin.example.com/a', 'f')).toEqual([]);
    expect(checkPluginKey('svc.run/role-template', 'f')).toEqual([]);
    expect(checkPluginKey('rbac.authorization.svc.run/aggregate-to-editor', 'f')).toEqual([]);
    expect(checkPluginKey('svc.run/other', 'f')).toHaveLength(1);
    expect(checkPluginKey('plugin.svc.run/x', 'f')).toHaveLength(1);
    expect(checkPluginKey('unprefixed', 'f')).toHaveLength(1);
  });
});
