/**
 * Built-in roles (SPEC.md "Built-in roles shown", CONTRACT §6), created on start when missing.
 * Plugins extend them through `aggregate-to-<role>` templates (the content plugin aggregates
 * its post templates into contributor, author, editor and post-manager); the rules below are
 * what each role means without any plugin.
 */
import { TOKEN_GROUP, TOKEN_RESOURCE } from '../auth/tokens.js';
import type { PolicyRule } from './match.js';
import {
  ANNOTATION_DEPENDENCIES,
  ANNOTATION_DISPLAY_NAME,
  ANNOTATION_UI_PERMISSIONS,
  ANONYMOUS_ROLE,
  AUTHENTICATED_ROLE,
  LABEL_HIDDEN,
  SUPER_ROLE,
} from './resolve.js';

/** The console API group of the permissions endpoint (CONTRACT §6). */
export const CONSOLE_GROUP = 'api.console.svc.run';
export const PERMISSIONS_PATH = `/apis/${CONSOLE_GROUP}/v1alpha1/users/-/permissions`;

/**
 * The non-resource URLs of discovery, the OpenAPI documents and /docs. A right on `/apis` (or
 * `/api`) also opens `/apis/{g}` and `/apis/{g}/{v}` (`/api/{v}`), each filtered to what the
 * caller may read (apidocs/routes.ts `discoveryRoot`), so no `/apis/*` grant is needed: that one
 * would also reach plugins' deeper non-resource routes.
 */
export const API_REFERENCE_URLS = ['/api', '/apis', '/openapi/*', '/openapi.json', '/docs', '/docs/*'];

/** Post groups of the platform content plugin. */
const CONTENT = 'content.svc.run';
const UC_CONTENT = 'uc.api.content.svc.run';

export interface BuiltinRole {
  metadata: { name: string; labels?: Record<string, string>; annotations: Record<string, string> };
  rules: PolicyRule[];
}

const role = (
  name: string,
  displayName: string,
  rules: PolicyRule[],
  opts: { hidden?: boolean; dependencies?: string[]; ui?: string[] } = {},
): BuiltinRole => {
  const annotations: Record<string, string> = { [ANNOTATION_DISPLAY_NAME]: displayName };
  if (opts.dependencies) annotations[ANNOTATION_DEPENDENCIES] = JSON.stringify(opts.dependencies);
  if (opts.ui) annotations[ANNOTATION_UI_PERMISSIONS] = JSON.stringify(opts.ui);
  return { metadata: { name, ...(opts.hidden ? { labels: { [LABEL_HIDDEN]: 'true' } } : {}), annotations }, rules };
};

export const BUILTIN_ROLES: readonly BuiltinRole[] = [
  role(
    SUPER_ROLE,
    'Super administrator',
    [
      { apiGroups: ['*'], resources: ['*'], verbs: ['*'] },
      { nonResourceURLs: ['*'], verbs: ['*'] },
    ],
    { ui: ['*'] },
  ),
  role(
    ANONYMOUS_ROLE,
    'Anonymous',
    // Everyone may ask what they may do (their own permissions).
    [{ apiGroups: [CONSOLE_GROUP], resources: ['users/permissions'], resourceNames: ['-'], verbs: ['get'] }],
    { hidden: true },
  ),
  role(
    AUTHENTICATED_ROLE,
    'Authenticated',
    [
      // Personal access tokens: each user creates, lists and revokes only their own.
      { apiGroups: [TOKEN_GROUP], resources: [TOKEN_RESOURCE], verbs: ['create', 'list', 'get', 'delete'] },
      // Discovery, the OpenAPI documents and the docs page (CONTRACT §8); each shows only what
      // the caller may read.
      { nonResourceURLs: API_REFERENCE_URLS, verbs: ['get', 'head'] },
    ],
    { hidden: true },
  ),
  role('guest', 'Guest', [], { dependencies: [ANONYMOUS_ROLE, AUTHENTICATED_ROLE] }),
  role('contributor', 'Contributor', [{ apiGroups: [UC_CONTENT], resources: ['posts'], verbs: ['create', 'get', 'list'] }], {
    dependencies: ['guest'],
    ui: ['uc:posts:submit'],
  }),
  role('author', 'Author', [{ apiGroups: [UC_CONTENT], resources: ['posts', 'posts/publish'], verbs: ['get', 'list', 'update', 'delete'] }], {
    dependencies: ['contributor'],
    ui: ['uc:posts:publish'],
  }),
  role('editor', 'Editor', [{ apiGroups: [CONTENT], resources: ['posts'], verbs: ['get', 'list', 'watch'] }], {
    dependencies: ['guest'],
    ui: ['system:posts:view'],
  }),
  role('post-manager', 'Post manager', [{ apiGroups: [CONTENT], resources: ['posts', 'posts/status'], verbs: ['*'] }], {
    dependencies: ['editor'],
    ui: ['system:posts:manage'],
  }),
];

/** Roles nobody may change or delete. */
export const IMMUTABLE_ROLES: ReadonlySet<string> = new Set([SUPER_ROLE]);
