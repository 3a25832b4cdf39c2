/**
 * Built-in roles (docs/API.md §6), created on start when missing and
 * reconciled when stored by an earlier version (bootstrap/roles-and-first-admin.ts `reconcileRole`).
 * Plugins extend them through `aggregate-to-<role>` templates (the content plugin aggregates
 * its post templates into contributor, author, editor and post-manager); the rules below are
 * what each role means without any plugin.
 */
import { TOKEN_GROUP, TOKEN_RESOURCE } from '../authentication/tokens.js';
import type { PolicyRule } from './match.js';
import {
  ANNOTATION_DEPENDENCIES,
  ANNOTATION_DISPLAY_NAME,
  ANNOTATION_MODULE,
  ANNOTATION_UI_PERMISSIONS,
  ANONYMOUS_ROLE,
  AUTHENTICATED_ROLE,
  LABEL_HIDDEN,
  LABEL_ROLE_TEMPLATE,
  SUPER_ROLE,
} from './resolve.js';

/** The console API group of the permissions endpoint (docs/API.md §6). */
export const CONSOLE_GROUP = 'api.console.svc.run';

/**
 * The non-resource URLs of discovery, the OpenAPI documents and /docs. A right on `/apis` (or
 * `/api`) also opens `/apis/{g}` and `/apis/{g}/{v}` (`/api/{v}`), each filtered to what the
 * caller may read (apidocs/routes.ts `discoveryRoot`), so no `/apis/*` grant is needed: that one
 * would also reach plugins' deeper non-resource routes.
 */
export const API_REFERENCE_URLS = ['/api', '/apis', '/openapi/*', '/openapi.json', '/docs', '/docs/*'];

export interface BuiltinRole {
  metadata: { name: string; labels?: Record<string, string>; annotations: Record<string, string> };
  rules: PolicyRule[];
}

const role = (
  name: string,
  displayName: string,
  rules: PolicyRule[],
  opts: { hidden?: boolean; dependencies?: string[]; ui?: string[]; module?: string } = {},
): BuiltinRole => {
  const annotations: Record<string, string> = { [ANNOTATION_DISPLAY_NAME]: displayName };
  if (opts.dependencies) annotations[ANNOTATION_DEPENDENCIES] = JSON.stringify(opts.dependencies);
  if (opts.ui) annotations[ANNOTATION_UI_PERMISSIONS] = JSON.stringify(opts.ui);
  const labels: Record<string, string> = {};
  if (opts.hidden) labels[LABEL_HIDDEN] = 'true';
  // A role with a module is a role template: the console's roles page lists it under that module.
  if (opts.module) {
    annotations[ANNOTATION_MODULE] = opts.module;
    labels[LABEL_ROLE_TEMPLATE] = 'true';
  }
  return { metadata: { name, ...(Object.keys(labels).length ? { labels } : {}), annotations }, rules };
};

/** Plugin objects (plugin.svc.run), which the console's plugins page reads and switches. */
const PLUGIN_GROUP = 'plugin.svc.run';
const READ = ['get', 'list', 'watch'];
/**
 * Every ordinary verb, named: a template never says `*`, so what it grants is readable, and it
 * never holds `escalate`, `bind` or `impersonate` (docs/API.md §6 "No escalation").
 */
const MANAGE = [...READ, 'create', 'update', 'patch', 'delete', 'deletecollection'];

/**
 * The console's built-in role templates (docs/API.md §9): a view and a manage template for users,
 * roles and plugins, each carrying the UI permissions of its console route.
 */
const SYSTEM_TEMPLATES: BuiltinRole[] = [
  role(
    'system-users-view',
    'View users',
    [
      { apiGroups: [''], resources: ['users', 'rolebindings'], verbs: READ },
      { apiGroups: [''], resources: ['roles'], verbs: ['get', 'list'] },
      { apiGroups: [CONSOLE_GROUP], resources: ['users/permissions'], verbs: ['get'] },
    ],
    { module: 'Users', ui: ['system:users:view'] },
  ),
  role('system-users-manage', 'Manage users', [{ apiGroups: [''], resources: ['users', 'rolebindings'], verbs: MANAGE }], {
    module: 'Users',
    dependencies: ['system-users-view'],
    ui: ['system:users:manage'],
  }),
  role('system-roles-view', 'View roles', [{ apiGroups: [''], resources: ['roles'], verbs: READ }], {
    module: 'Roles',
    ui: ['system:roles:view'],
  }),
  role('system-roles-manage', 'Manage roles', [{ apiGroups: [''], resources: ['roles'], verbs: MANAGE }], {
    module: 'Roles',
    dependencies: ['system-roles-view'],
    ui: ['system:roles:manage'],
  }),
  role('system-plugins-view', 'View plugins', [{ apiGroups: [PLUGIN_GROUP], resources: ['plugins'], verbs: READ }], {
    module: 'Plugins',
    ui: ['system:plugins:view'],
  }),
  role('system-plugins-manage', 'Manage plugins', [{ apiGroups: [PLUGIN_GROUP], resources: ['plugins'], verbs: MANAGE }], {
    module: 'Plugins',
    dependencies: ['system-plugins-view'],
    ui: ['system:plugins:manage'],
  }),
];

/** Every UI permission of the console's built-in routes (the super administrator holds them all). */
export const SYSTEM_UI_PERMISSIONS: readonly string[] = SYSTEM_TEMPLATES.flatMap((t) =>
  JSON.parse(t.metadata.annotations[ANNOTATION_UI_PERMISSIONS] ?? '[]') as string[],
);

export const BUILTIN_ROLES: readonly BuiltinRole[] = [
  role(
    SUPER_ROLE,
    'Super administrator',
    [
      { apiGroups: ['*'], resources: ['*'], verbs: ['*'] },
      { nonResourceURLs: ['*'], verbs: ['*'] },
      // `*` does not grant these (match.ts ESCALATION_VERBS); only this role names them.
      { apiGroups: ['*'], resources: ['*'], verbs: ['bind', 'escalate', 'impersonate'] },
    ],
    { ui: ['*', ...SYSTEM_UI_PERMISSIONS] },
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
      // Discovery, the OpenAPI documents and the docs page (docs/API.md §8); each shows only what
      // the caller may read.
      { nonResourceURLs: API_REFERENCE_URLS, verbs: ['get', 'head'] },
      // The console's plugin routes: each user sees those whose model they may list or whose UI
      // permissions they hold.
      { apiGroups: [CONSOLE_GROUP], resources: ['routes'], verbs: ['list'] },
    ],
    { hidden: true },
  ),
  role('guest', 'Guest', [], { dependencies: [ANONYMOUS_ROLE, AUTHENTICATED_ROLE] }),
  // The post roles hold no rules of their own: the content plugin's templates aggregate into
  // them (plugins/platform/content/extensions/role-templates.yaml), as any plugin's would.
  role('contributor', 'Contributor', [], { dependencies: ['guest'] }),
  role('author', 'Author', [], { dependencies: ['contributor'] }),
  role('editor', 'Editor', [], { dependencies: ['guest'] }),
  role('post-manager', 'Post manager', [], { dependencies: ['editor'] }),
  ...SYSTEM_TEMPLATES,
];

/** Roles nobody may change or delete. */
export const IMMUTABLE_ROLES: ReadonlySet<string> = new Set([SUPER_ROLE]);
