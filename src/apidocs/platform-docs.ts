/**
 * The routes the platform serves itself (pipeline/platform-routes.ts), described for the OpenAPI
 * documents like a plugin describes its custom routes: personal access tokens (docs/API.md §2) and
 * the permissions of a user (docs/API.md §6) and the console's plugin routes (docs/API.md §9). Listed
 * only for callers allowed on them.
 */
import { TOKEN_GROUP, TOKEN_RESOURCE, TOKEN_VERSION } from '../authentication/tokens.js';
import { CONSOLE_GROUP } from '../authorization/builtin-roles.js';
import type { DocumentedRoute } from './openapi.js';

const TOKENS = ['apis', TOKEN_GROUP, TOKEN_VERSION, TOKEN_RESOURCE];
const problem = (code: string, name: string) => ({ [code]: { $ref: `#/components/responses/${name}` } });

const tokenSchema = {
  type: 'object',
  properties: {
    apiVersion: { type: 'string' },
    kind: { type: 'string', examples: ['PersonalAccessToken'] },
    metadata: { $ref: '#/components/schemas/ObjectMeta' },
    spec: {
      type: 'object',
      properties: {
        displayName: { type: 'string' },
        expiresAt: { type: 'string', format: 'date-time', description: 'After this instant the token gets 401.' },
        username: { type: 'string', readOnly: true, description: 'The owner.' },
      },
    },
  },
};
const json = (schema: unknown) => ({ 'application/json': { schema } });

export const PLATFORM_ROUTES: DocumentedRoute[] = [
  {
    plugin: '',
    method: 'POST',
    segments: TOKENS,
    openapi: {
      operationId: 'createPersonalAccessToken',
      summary: 'Create a personal access token for the caller',
      description: 'The answer carries the token text in `token`, this once; send it as `Authorization: Bearer <token>`.',
      tags: ['personal access tokens'],
      requestBody: {
        required: true,
        content: json({
          type: 'object',
          required: ['spec'],
          properties: { spec: { type: 'object', required: ['displayName'], properties: { displayName: { type: 'string' }, expiresAt: { type: 'string', format: 'date-time' } } } },
        }),
      },
      responses: {
        '201': { description: 'Created.', content: json({ allOf: [tokenSchema, { type: 'object', required: ['token'], properties: { token: { type: 'string' } } }] }) },
        ...problem('400', 'BadRequest'),
        ...problem('415', 'UnsupportedMediaType'),
        ...problem('422', 'Invalid'),
      },
    },
  },
  {
    plugin: '',
    method: 'GET',
    segments: TOKENS,
    openapi: {
      operationId: 'listPersonalAccessTokens',
      summary: "List the caller's personal access tokens (never their text)",
      tags: ['personal access tokens'],
      responses: {
        '200': {
          description: 'The tokens.',
          content: json({ type: 'object', required: ['items'], properties: { items: { type: 'array', items: tokenSchema }, total: { type: 'integer' } } }),
        },
      },
    },
  },
  {
    plugin: '',
    method: 'GET',
    segments: [...TOKENS, '{name}'],
    openapi: {
      operationId: 'getPersonalAccessToken',
      summary: "Read one of the caller's personal access tokens",
      tags: ['personal access tokens'],
      responses: { '200': { description: 'The token (without its text).', content: json(tokenSchema) }, ...problem('404', 'NotFound') },
    },
  },
  {
    plugin: '',
    method: 'DELETE',
    segments: [...TOKENS, '{name}'],
    openapi: {
      operationId: 'revokePersonalAccessToken',
      summary: "Revoke one of the caller's personal access tokens",
      tags: ['personal access tokens'],
      responses: { '200': { description: 'The revoked token.', content: json(tokenSchema) }, ...problem('404', 'NotFound') },
    },
  },
  {
    plugin: '',
    method: 'GET',
    segments: ['apis', CONSOLE_GROUP, 'v1alpha1', 'users', '{name}', 'permissions'],
    openapi: {
      operationId: 'getUserPermissions',
      summary: 'The roles and UI permissions of a user (`-`: the caller)',
      tags: ['permissions'],
      responses: {
        '200': {
          description: 'Every role held after resolution, and the UI permissions they carry.',
          content: json({
            type: 'object',
            required: ['roles', 'uiPermissions'],
            properties: { roles: { type: 'array', items: { type: 'string' } }, uiPermissions: { type: 'array', items: { type: 'string' } } },
          }),
        },
        ...problem('404', 'NotFound'),
      },
    },
  },
  {
    plugin: '',
    method: 'GET',
    segments: ['apis', CONSOLE_GROUP, 'v1alpha1', 'routes'],
    openapi: {
      operationId: 'listConsoleRoutes',
      summary: "The console routes of the started plugins (their manifests' spec.console.routes)",
      description:
        'Routes whose model the caller may list come with the model and its JSON Schema; routes whose UI permissions the caller holds without that right come with `schema: null`; others are left out.',
      tags: ['console'],
      responses: {
        '200': {
          description: 'The routes.',
          content: json({
            type: 'object',
            required: ['items'],
            properties: {
              items: {
                type: 'array',
                items: {
                  type: 'object',
                  required: ['plugin', 'name', 'title', 'resource', 'permissions', 'managePermissions', 'group', 'version', 'kind', 'schema'],
                  properties: {
                    plugin: { type: 'string' },
                    name: { type: 'string' },
                    title: { type: 'string' },
                    resource: { type: 'string', description: "The model's plural." },
                    permissions: { type: 'array', items: { type: 'string' } },
                    managePermissions: { type: 'array', items: { type: 'string' } },
                    group: { type: 'string' },
                    version: { type: 'string' },
                    kind: { type: 'string' },
                    schema: { type: ['object', 'null'], description: "The model's JSON Schema." },
                  },
                },
              },
            },
          }),
        },
      },
    },
  },
];
