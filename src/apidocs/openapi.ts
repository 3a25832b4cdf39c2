/**
 * OpenAPI 3.1 documents generated from the registered models and the plugins' custom routes
 * (docs/API.md §8). Pure: the caller decides which models and routes go in (apidocs/visibility.ts).
 *
 * Model schemas are JSON Schema 2020-12, OAS 3.1's own dialect, so they go in as validated, with
 * two rewrites that keep their meaning inside a bigger document: `metadata` becomes a reference to
 * the shared ObjectMeta, and each model's `$defs` move to components/schemas as
 * `<Type>_<def>` with every local `$ref` (`#`, `#/$defs/X…`, `#/properties/…`) rewritten to point
 * there. `<Type>` is the model's GraphQL type name (`PeopleExampleComV1alpha1Person`), stable
 * whatever else is registered.
 *
 * operationIds: in a group-version document, `list{Plural}`, `create{Kind}`, `get{Kind}`,
 * `replace{Kind}`, `patch{Kind}`, `delete{Kind}`, `deleteCollection{Plural}`,
 * `get|replace|patch{Kind}Status` (kinds are unique inside a group-version). In the combined
 * /openapi.json two groups may share a kind, so every id carries the group and version:
 * `listPeopleExampleComV1alpha1Persons`.
 */
import { groupTypePrefix, typeName, upperFirst, versionTypePart } from '../graphql/naming.js';
import type { Model } from '../registry/model.js';
import type { RouteOpenAPI } from '../plugins/code-loader.js';
import { MAX_TIMEOUT_SECONDS } from '../rest/watch.js';

type Json = Record<string, unknown>;

/** A custom route as far as its documentation is concerned. */
export interface DocumentedRoute {
  plugin: string;
  method: string;
  segments: string[];
  openapi?: RouteOpenAPI;
}

/** The key of a group-version in the /openapi/v3 index: `apis/<g>/<v>`, or `api/<v>` for the platform kinds. */
export const groupVersionKey = (group: string, version: string): string => (group ? `apis/${group}/${version}` : `api/${version}`);

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const response = (name: string) => ({ $ref: `#/components/responses/${name}` });

const ERROR_RESPONSES: Record<string, [string, string]> = {
  '400': ['BadRequest', 'Malformed request: bad JSON, selector, sort, non-indexed field, unknown query parameter or name mismatch.'],
  '401': ['Unauthorized', 'No or wrong credentials.'],
  '403': ['Forbidden', 'The caller may not do this.'],
  '404': ['NotFound', 'No such object or resource.'],
  '409': ['Conflict', 'Version conflict, name or unique index taken, or the object is being deleted.'],
  '415': ['UnsupportedMediaType', 'The Content-Type is not accepted here.'],
  '422': ['Invalid', 'The object breaks the schema, name or label rules; `errors` lists every failing field.'],
};

function errors(...codes: string[]): Json {
  const out: Json = {};
  for (const c of codes) out[c] = response(ERROR_RESPONSES[c]![0]);
  return out;
}

const READ_ERRORS = ['400', '401', '403', '404'];
const WRITE_ERRORS = ['400', '401', '403', '404', '409', '415', '422'];

function sharedComponents(): { schemas: Json; responses: Json; parameters: Json; securitySchemes: Json } {
  const stringMap = { type: 'object', additionalProperties: { type: 'string' } };
  const schemas: Json = {
    ObjectMeta: {
      type: 'object',
      description: 'Metadata every object carries. creationTimestamp, deletionTimestamp and version are set by the server.',
      properties: {
        name: { type: 'string', maxLength: 253, pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$', description: 'Unique within the resource.' },
        generateName: { type: 'string', description: 'On create instead of name: the name becomes this prefix plus random characters.' },
        labels: { ...stringMap, description: 'Selectable key/value pairs (labelSelector).' },
        annotations: { ...stringMap, description: 'Non-selectable key/value pairs.' },
        finalizers: { type: 'array', items: { type: 'string' }, description: 'While not empty, a deleted object stays readable.' },
        version: { type: 'integer', description: 'Optimistic-lock version; required on PUT, optional on PATCH.' },
        creationTimestamp: { type: 'string', format: 'date-time', readOnly: true },
        deletionTimestamp: { type: 'string', format: 'date-time', readOnly: true },
      },
    },
    FieldError: {
      type: 'object',
      required: ['field', 'message'],
      properties: { field: { type: 'string' }, message: { type: 'string' } },
    },
    Problem: {
      type: 'object',
      description: 'RFC 9457 problem details.',
      required: ['type', 'title', 'status', 'detail', 'instance'],
      properties: {
        type: { type: 'string' },
        title: { type: 'string' },
        status: { type: 'integer' },
        detail: { type: 'string' },
        instance: { type: 'string' },
        errors: { type: 'array', items: ref('FieldError'), description: 'Every failing field (422).' },
      },
    },
    JsonPatch: {
      type: 'array',
      description: 'RFC 6902 JSON Patch.',
      items: {
        type: 'object',
        required: ['op', 'path'],
        properties: {
          op: { type: 'string', enum: ['add', 'remove', 'replace', 'move', 'copy', 'test'] },
          path: { type: 'string' },
          from: { type: 'string' },
          value: {},
        },
      },
    },
  };
  const responses: Json = {};
  for (const [name, description] of Object.values(ERROR_RESPONSES)) {
    responses[name] = { description, content: { 'application/problem+json': { schema: ref('Problem') } } };
  }
  const repeatable = (name: string, description: string) => ({
    name,
    in: 'query',
    required: false,
    description,
    style: 'form',
    explode: true,
    schema: { type: 'array', items: { type: 'string' } },
  });
  const parameters: Json = {
    page: { name: 'page', in: 'query', required: false, description: 'Page number, 1-based.', schema: { type: 'integer', minimum: 1 } },
    size: { name: 'size', in: 'query', required: false, description: 'Page size; every object when omitted.', schema: { type: 'integer', minimum: 0 } },
    sort: repeatable('sort', '`field,asc|desc` on an indexed field; repeatable. Default `metadata.creationTimestamp,desc` then `metadata.name,asc`.'),
    labelSelector: repeatable('labelSelector', 'Label terms (`k=v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`), comma-separated; repeatable, all ANDed.'),
    fieldSelector: repeatable(
      'fieldSelector',
      'Terms on indexed fields (`name` means metadata.name), comma-separated; repeatable, all ANDed. A value is everything after its operator up to the next unescaped comma, spaces included (`spec.author=Ada Lovelace`); `\\` escapes `,` `(` `)` `=` `!` and `\\`.',
    ),
    limit: {
      name: 'limit',
      in: 'query',
      required: false,
      description: 'Asks for a keyset page of at most this many objects (1–1000), answered as `{items, resourceVersion, continue}`; not with page or size. Its cost does not grow with its depth.',
      schema: { type: 'integer', minimum: 1, maximum: 1000 },
    },
    continue: {
      name: 'continue',
      in: 'query',
      required: false,
      description: 'With limit: the `continue` token of the previous keyset page. Bound to the sort and selectors it was issued for (another one, or an altered token, is a 400).',
      schema: { type: 'string' },
    },
    watch: {
      name: 'watch',
      in: 'query',
      required: false,
      description: '`true` turns the list into a watch: an application/x-ndjson stream of `{type, object, resourceVersion}` events (or use a WebSocket upgrade on the same path).',
      schema: { type: 'boolean' },
    },
    resourceVersion: {
      name: 'resourceVersion',
      in: 'query',
      required: false,
      description:
        'Watch: resume after this change-feed position. Without it the stream opens with ADDED for every match, then one BOOKMARK annotated `k8s.io/initial-events-end: "true"`.',
      schema: { type: 'string' },
    },
    allowWatchBookmarks: {
      name: 'allowWatchBookmarks',
      in: 'query',
      required: false,
      description: 'Watch: `true` adds a BOOKMARK with the latest position every 10 s (default `false`). The BOOKMARK ending the initial events comes either way.',
      schema: { type: 'boolean', default: false },
    },
    timeoutSeconds: {
      name: 'timeoutSeconds',
      in: 'query',
      required: false,
      description: 'Watch: the stream ends cleanly (ndjson: end of the body; WebSocket: close 1000) after this many seconds; 0 or absent: no timeout. Else 400.',
      schema: { type: 'integer', minimum: 0, maximum: MAX_TIMEOUT_SECONDS },
    },
  };
  const securitySchemes: Json = {
    basicAuth: { type: 'http', scheme: 'basic', description: 'Username and password.' },
    bearerAuth: { type: 'http', scheme: 'bearer', description: 'A personal access token.' },
  };
  return { schemas, responses, parameters, securitySchemes };
}

const deepClone = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

const defName = (type: string, def: string) => `${type}_${def.replace(/[^A-Za-z0-9._-]/g, '_')}`;

/** Rewrites the model-local `$ref`s of `node` in place. */
function rewriteRefs(node: unknown, type: string): void {
  if (Array.isArray(node)) {
    for (const x of node) rewriteRefs(x, type);
    return;
  }
  if (!node || typeof node !== 'object') return;
  const obj = node as Json;
  for (const [k, v] of Object.entries(obj)) {
    if ((k === '$ref' || k === '$dynamicRef') && typeof v === 'string' && v.startsWith('#')) {
      obj[k] = rewriteRef(v, type);
    } else {
      rewriteRefs(v, type);
    }
  }
}

function rewriteRef(r: string, type: string): string {
  const pointer = r.slice(1);
  const m = /^\/\$defs\/([^/]+)(.*)$/.exec(pointer);
  if (m) {
    const def = decodeURIComponent(m[1]!).replace(/~1/g, '/').replace(/~0/g, '~');
    return `#/components/schemas/${defName(type, def)}${m[2]}`;
  }
  return `#/components/schemas/${type}${pointer}`;
}

/**
 * Marks free-form objects (`type: object` with no property keywords) `additionalProperties: true`:
 * the same meaning in JSON Schema, but generators such as openapi-typescript otherwise read
 * them as empty objects.
 */
function openFreeForm(node: unknown): void {
  if (Array.isArray(node)) {
    for (const x of node) openFreeForm(x);
    return;
  }
  if (!node || typeof node !== 'object') return;
  const obj = node as Json;
  const isObject = obj.type === 'object' || (Array.isArray(obj.type) && obj.type.includes('object'));
  const shaped = ['properties', 'additionalProperties', 'patternProperties', 'unevaluatedProperties', '$ref', 'allOf', 'anyOf', 'oneOf'].some((k) => k in obj);
  if (isObject && !shaped) obj.additionalProperties = true;
  for (const [k, v] of Object.entries(obj)) if (k !== 'enum' && k !== 'const' && k !== 'default' && k !== 'examples') openFreeForm(v);
}

/**
 * Says what a reference (`x-svc-ref`, docs/API.md §13) means in its property's description; the
 * keyword itself stays for generators and tools that read it.
 */
function describeRefs(node: unknown): void {
  if (Array.isArray(node)) {
    for (const x of node) describeRefs(x);
    return;
  }
  if (!node || typeof node !== 'object') return;
  const obj = node as Json;
  const ref = obj['x-svc-ref'] as { group?: unknown; version?: unknown; kind?: unknown; field?: unknown; reverse?: unknown } | undefined;
  if (ref && typeof ref === 'object' && typeof ref.kind === 'string') {
    const apiVersion = ref.group ? `${String(ref.group)}/${String(ref.version)}` : String(ref.version);
    const many = obj.type === 'array';
    const note = `References ${many ? 'objects' : 'an object'} of kind ${ref.kind} (${apiVersion}) by metadata.name (x-svc-ref); GraphQL resolves ${many ? 'them' : 'it'} as \`${String(ref.field)}\`${typeof ref.reverse === 'string' ? `, and the target lists the referring objects as the connection \`${ref.reverse}\`` : ''}.`;
    obj.description = typeof obj.description === 'string' && obj.description ? `${obj.description} ${note}` : note;
  }
  for (const [k, v] of Object.entries(obj)) if (k !== 'enum' && k !== 'const' && k !== 'default' && k !== 'examples' && k !== 'x-svc-ref') describeRefs(v);
}

/** The component schemas of one model: the object, its $defs, and its list envelope. */
function modelSchemas(model: Model): Json {
  const type = typeName(model);
  const root = deepClone(model.schema) as Json;
  const defs = (root.$defs ?? {}) as Json;
  delete root.$defs;
  delete root.$schema;
  delete root.$id;
  rewriteRefs(root, type);
  for (const s of Object.values(defs)) rewriteRefs(s, type);
  openFreeForm(root);
  openFreeForm(defs);
  describeRefs(root);
  describeRefs(defs);
  const properties = { ...((root.properties ?? {}) as Json) };
  properties.apiVersion = { type: 'string', description: `\`${model.apiVersion}\``, examples: [model.apiVersion] };
  properties.kind = { type: 'string', description: `\`${model.kind}\``, examples: [model.kind] };
  properties.metadata = ref('ObjectMeta');
  root.properties = properties;
  root.description ??= `${model.kind} (${model.apiVersion}).`;
  const out: Json = { [type]: root };
  for (const [name, schema] of Object.entries(defs)) out[defName(type, name)] = schema;
  out[`${type}List`] = {
    type: 'object',
    // One schema for both answers, so a client generated from it types either (and code written
    // for numbered pages keeps compiling): which fields are present depends on the parameters.
    description:
      `A page of ${model.plural}. Numbered pages (page/size, or neither) carry page, size, total, totalPages, first, last, ` +
      'hasNext and hasPrevious; keyset pages (limit/continue) carry continue and, when known, remainingItemCount instead.',
    required: ['items', 'resourceVersion'],
    properties: {
      continue: { type: 'string', description: 'Keyset pages: token of the next page (pass it as `continue` with the same sort and selectors); "" on the last page.' },
      remainingItemCount: { type: 'integer', description: 'Keyset pages: how many matches follow this page, when known (exact when present).' },
      page: { type: 'integer' },
      size: { type: 'integer' },
      total: { type: 'integer' },
      totalPages: { type: 'integer' },
      first: { type: 'boolean' },
      last: { type: 'boolean' },
      hasNext: { type: 'boolean' },
      hasPrevious: { type: 'boolean' },
      items: { type: 'array', items: ref(type) },
      resourceVersion: { type: 'string', description: 'The change-feed position the list was read at (watch from here).' },
    },
  };
  return out;
}

export interface DocumentModel {
  model: Model;
  /** Whether `{plural}/{name}/status` is documented (the caller may read it). */
  status: boolean;
}

export interface DocumentInput {
  title: string;
  description?: string;
  models: DocumentModel[];
  routes: DocumentedRoute[];
  /** Models whose schemas go in even without paths (those a documented custom route may reference). */
  extraSchemas?: Model[];
  /** Qualify every operationId with the group and version (the combined document). */
  qualified: boolean;
}

const json = (schema: Json) => ({ 'application/json': { schema } });

/** One OpenAPI 3.1 document. */
export function buildDocument(input: DocumentInput): Json {
  const shared = sharedComponents();
  const schemas: Json = { ...shared.schemas };
  const paths: Json = {};
  const usedIds = new Set<string>();
  const uniqueId = (id: string) => {
    let out = id;
    for (let i = 2; usedIds.has(out); i++) out = `${id}${i}`;
    usedIds.add(out);
    return out;
  };
  const tags: Json[] = [];

  const sorted = [...input.models].sort((a, b) => a.model.apiVersion.localeCompare(b.model.apiVersion) || a.model.plural.localeCompare(b.model.plural));
  for (const { model, status } of sorted) {
    Object.assign(schemas, modelSchemas(model));
    const type = typeName(model);
    const K = model.kind;
    const P = upperFirst(model.plural);
    const q = input.qualified ? `${groupTypePrefix(model.group)}${versionTypePart(model.version)}` : '';
    const op = (verb: string, rest: string) => uniqueId(`${verb}${q}${rest}`);
    const tag = `${model.apiVersion}/${model.plural}`;
    tags.push({ name: tag, description: `${K} objects (${model.plugin ? `plugin "${model.plugin}"` : 'platform'}).` });
    const base = model.group ? `/apis/${model.group}/${model.version}/${model.plural}` : `/api/${model.version}/${model.plural}`;
    const nameParam = { name: 'name', in: 'path', required: true, description: `Name of the ${K}.`, schema: { type: 'string' } };
    const object = json(ref(type));
    const list = json(ref(`${type}List`));
    const params = (...names: string[]) => names.map((n) => ({ $ref: `#/components/parameters/${n}` }));
    const patchBody = {
      required: true,
      description: 'A JSON merge patch (RFC 7396) or a JSON Patch (RFC 6902). Unconditional unless it carries metadata.version.',
      content: {
        'application/merge-patch+json': {
          schema: { type: 'object', additionalProperties: true, description: `A merge patch of a ${K}: the fields to change, null to remove.` },
        },
        'application/json-patch+json': { schema: ref('JsonPatch') },
      },
    };
    paths[base] = {
      get: {
        operationId: op('list', P),
        summary: `List ${model.plural}`,
        description: 'Answered from indexes. With `limit` (and `continue`) a keyset page; with `page`/`size` a numbered page with its total. With `watch=true` (or as a WebSocket upgrade) the request becomes a watch.',
        tags: [tag],
        parameters: params('page', 'size', 'limit', 'continue', 'sort', 'labelSelector', 'fieldSelector', 'watch', 'resourceVersion', 'allowWatchBookmarks', 'timeoutSeconds'),
        responses: { '200': { description: `A page of ${model.plural}.`, content: list }, ...errors(...READ_ERRORS) },
      },
      post: {
        operationId: op('create', K),
        summary: `Create a ${K}`,
        tags: [tag],
        requestBody: { required: true, content: object },
        responses: {
          '201': {
            description: 'Created.',
            headers: { Location: { description: 'The URL of the new object.', schema: { type: 'string' } } },
            content: object,
          },
          ...errors(...WRITE_ERRORS),
        },
      },
      delete: {
        operationId: op('deleteCollection', P),
        summary: `Delete the ${model.plural} the selectors match`,
        tags: [tag],
        parameters: params('page', 'size', 'sort', 'labelSelector', 'fieldSelector'),
        responses: { '200': { description: 'What was deleted.', content: list }, ...errors(...READ_ERRORS, '409') },
      },
    };
    paths[`${base}/{name}`] = {
      parameters: [nameParam],
      get: { operationId: op('get', K), summary: `Read a ${K}`, tags: [tag], responses: { '200': { description: `The ${K}.`, content: object }, ...errors(...READ_ERRORS) } },
      put: {
        operationId: op('replace', K),
        summary: `Replace a ${K}`,
        description: 'Must carry the stored metadata.version (409 when it differs, 422 when missing). Leaves status unchanged.',
        tags: [tag],
        requestBody: { required: true, content: object },
        responses: { '200': { description: 'Updated.', content: object }, ...errors(...WRITE_ERRORS) },
      },
      patch: {
        operationId: op('patch', K),
        summary: `Patch a ${K}`,
        description: 'Leaves status unchanged.',
        tags: [tag],
        requestBody: patchBody,
        responses: { '200': { description: 'Patched.', content: object }, ...errors(...WRITE_ERRORS) },
      },
      delete: {
        operationId: op('delete', K),
        summary: `Delete a ${K}`,
        description: 'Sets deletionTimestamp; the object is removed once it has no finalizers.',
        tags: [tag],
        responses: { '200': { description: 'The object as it stands.', content: object }, ...errors(...READ_ERRORS, '409') },
      },
    };
    if (status) {
      paths[`${base}/{name}/status`] = {
        parameters: [nameParam],
        get: { operationId: op('get', `${K}Status`), summary: `Read the status of a ${K}`, tags: [tag], responses: { '200': { description: `The ${K}.`, content: object }, ...errors(...READ_ERRORS) } },
        put: {
          operationId: op('replace', `${K}Status`),
          summary: `Replace the status of a ${K}`,
          description: 'Changes status only.',
          tags: [tag],
          requestBody: { required: true, content: object },
          responses: { '200': { description: 'Updated.', content: object }, ...errors(...WRITE_ERRORS) },
        },
        patch: {
          operationId: op('patch', `${K}Status`),
          summary: `Patch the status of a ${K}`,
          description: 'Changes status only.',
          tags: [tag],
          requestBody: patchBody,
          responses: { '200': { description: 'Patched.', content: object }, ...errors(...WRITE_ERRORS) },
        },
      };
    }
  }
  for (const m of input.extraSchemas ?? []) {
    for (const [k, v] of Object.entries(modelSchemas(m))) schemas[k] ??= v;
  }

  const routeTags = new Set<string>();
  for (const route of input.routes) {
    const path = `/${route.segments.join('/')}`;
    const method = route.method.toLowerCase();
    const doc = route.openapi ?? {};
    const [, group = '', version = ''] = route.segments;
    const tag = doc.tags?.[0] ?? `${group}/${version} (plugin "${route.plugin}")`;
    if (!doc.tags && !routeTags.has(tag)) {
      routeTags.add(tag);
      tags.push({ name: tag, description: `Custom routes of plugin "${route.plugin}".` });
    }
    const pathParams = route.segments
      .filter((s) => s.startsWith('{') && s.endsWith('}'))
      .map((s) => ({ name: s.slice(1, -1), in: 'path', required: true, schema: { type: 'string' } }));
    const declaredParams = (doc.parameters ?? []) as Json[];
    const parameters = [...pathParams.filter((p) => !declaredParams.some((d) => d.name === p.name && d.in === 'path')), ...declaredParams];
    const rest = route.segments.slice(3).map((s) => (s.startsWith('{') ? `By${upperFirst(s.slice(1, -1))}` : s.split(/[^A-Za-z0-9]+/).map(upperFirst).join('')));
    const q = input.qualified ? `${groupTypePrefix(group)}${versionTypePart(version)}` : '';
    const operation: Json = {
      operationId: uniqueId(doc.operationId ?? `${method}${q}${rest.join('')}`),
      summary: doc.summary ?? `${route.method} ${path}`,
      tags: doc.tags ?? [tag],
    };
    if (doc.description) operation.description = doc.description;
    if (parameters.length) operation.parameters = parameters;
    if (doc.requestBody) operation.requestBody = deepClone(doc.requestBody);
    const responses: Json = doc.responses ? deepClone(doc.responses) : { '200': { description: 'The route’s answer (not described by the plugin).' } };
    for (const c of ['401', '403']) responses[c] ??= response(ERROR_RESPONSES[c]![0]);
    operation.responses = responses;
    const item = (paths[path] ??= {}) as Json;
    item[method] = operation;
  }

  const doc: Json = {
    openapi: '3.1.0',
    info: { title: input.title, version: 'v1alpha1', ...(input.description ? { description: input.description } : {}) },
    servers: [{ url: '/' }],
    security: [{ basicAuth: [] }, { bearerAuth: [] }, {}],
    tags,
    paths,
    components: { schemas, responses: shared.responses, parameters: shared.parameters, securitySchemes: shared.securitySchemes },
  };
  return doc;
}
