/**
 * Platform kinds served under /api/v1alpha1 (group ""): roles, rolebindings, users.
 * Their storage and generic API come from here; their security behaviour (RBAC, password
 * hashing) is layered on by authorization/ and authentication/.
 */
import type { ModelDeclaration } from './model.js';
import type { CompileOptions } from './compile.js';

const stringArray = { type: 'array', items: { type: 'string' } };

export const ROLE: ModelDeclaration = {
  group: '',
  version: 'v1alpha1',
  kind: 'Role',
  singular: 'role',
  plural: 'roles',
  schema: {
    properties: {
      rules: {
        type: 'array',
        description: 'Resource rules (apiGroups, resources, resourceNames, verbs) or non-resource rules (nonResourceURLs, verbs).',
        items: {
          type: 'object',
          additionalProperties: false,
          properties: {
            apiGroups: stringArray,
            resources: stringArray,
            resourceNames: stringArray,
            nonResourceURLs: stringArray,
            verbs: { ...stringArray, minItems: 1 },
          },
          required: ['verbs'],
        },
      },
    },
  },
};

export const ROLE_BINDING: ModelDeclaration = {
  group: '',
  version: 'v1alpha1',
  kind: 'RoleBinding',
  singular: 'rolebinding',
  plural: 'rolebindings',
  schema: {
    required: ['roleRef', 'subjects'],
    properties: {
      roleRef: {
        type: 'object',
        additionalProperties: false,
        required: ['kind', 'name'],
        properties: {
          apiGroup: { type: 'string', enum: [''] },
          kind: { type: 'string', enum: ['Role'] },
          name: { type: 'string', minLength: 1 },
        },
      },
      subjects: {
        type: 'array',
        items: {
          type: 'object',
          additionalProperties: false,
          required: ['kind', 'name'],
          properties: {
            apiGroup: { type: 'string', enum: [''] },
            kind: { type: 'string', enum: ['User'] },
            name: { type: 'string', minLength: 1 },
          },
        },
      },
    },
  },
  indexes: [{ name: 'roleRef.name', path: 'roleRef.name' }, { name: 'subjects.name', path: 'subjects.name' }],
};

export const USER: ModelDeclaration = {
  group: '',
  version: 'v1alpha1',
  kind: 'User',
  singular: 'user',
  plural: 'users',
  schema: {
    properties: {
      spec: {
        type: 'object',
        properties: {
          displayName: { type: 'string', maxLength: 256 },
          email: { type: 'string', maxLength: 256 },
          password: { type: 'string', writeOnly: true, description: 'Write-only: accepted in plain text, stored hashed, never returned.' },
          disabled: { type: 'boolean' },
        },
      },
      status: { type: 'object' },
    },
  },
  indexes: [{ name: 'spec.email', path: 'spec.email' }],
};

export const PLATFORM_MODELS: { decl: ModelDeclaration; opts: CompileOptions }[] = [
  { decl: ROLE, opts: { platform: true, extraTopLevel: ['rules'] } },
  { decl: ROLE_BINDING, opts: { platform: true, extraTopLevel: ['roleRef', 'subjects'] } },
  { decl: USER, opts: { platform: true } },
];
