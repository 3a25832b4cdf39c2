/**
 * Metadata rules (docs/API.md §3): object names, generateName, label keys/values, annotations,
 * finalizers. Each check returns field errors instead of throwing, so one response can list
 * every problem.
 */
import { randomBytes } from 'node:crypto';
import type { FieldError } from '../errors/index.js';
import { LIMITS, type GatewayLimits } from '../limits.js';
import { isPlainObject } from '../store/object.js';

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/** metadata.name: lowercase letters, digits and '-', alphanumeric at both ends. */
const OBJECT_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const QUALIFIED_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

export const MAX_NAME_LENGTH = 253;
const GENERATED_SUFFIX_LENGTH = 5;

export function checkObjectName(name: unknown, field = 'metadata.name'): FieldError[] {
  if (typeof name !== 'string' || name === '') return [{ field, message: 'is required' }];
  if (name.length > MAX_NAME_LENGTH) {
    return [{ field, message: `must be at most ${MAX_NAME_LENGTH} characters` }];
  }
  if (!OBJECT_NAME.test(name)) {
    return [
      {
        field,
        message: 'must consist of lowercase letters, digits or "-", and start and end with a letter or digit',
      },
    ];
  }
  return [];
}

/** Checks a generateName prefix: it must produce valid names once the random suffix is added. */
export function checkGenerateName(prefix: unknown): FieldError[] {
  const field = 'metadata.generateName';
  if (typeof prefix !== 'string' || prefix === '') return [{ field, message: 'must be a non-empty string' }];
  if (prefix.length > MAX_NAME_LENGTH - GENERATED_SUFFIX_LENGTH) {
    return [{ field, message: `must be at most ${MAX_NAME_LENGTH - GENERATED_SUFFIX_LENGTH} characters` }];
  }
  if (!/^[a-z0-9][-a-z0-9]*$/.test(prefix)) {
    return [{ field, message: 'must consist of lowercase letters, digits or "-", and start with a letter or digit' }];
  }
  return [];
}

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';
export function generateName(prefix: string): string {
  const bytes = randomBytes(GENERATED_SUFFIX_LENGTH);
  let suffix = '';
  for (const b of bytes) suffix += ALPHABET[b % ALPHABET.length];
  return prefix + suffix;
}

/** `[prefix/]name` with prefix a DNS subdomain (≤253) and name a qualified name (1–63). */
export function checkQualifiedKey(key: string, field: string): FieldError[] {
  const slash = key.indexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  const errors: FieldError[] = [];
  if (prefix !== undefined) {
    if (prefix.length === 0 || prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix)) {
      errors.push({ field, message: `key "${key}": prefix must be a DNS subdomain of at most 253 characters` });
    }
  }
  if (name.length === 0 || name.length > 63 || !QUALIFIED_NAME.test(name)) {
    errors.push({
      field,
      message: `key "${key}": name must be 1-63 characters of [A-Za-z0-9-_.], starting and ending alphanumeric`,
    });
  }
  return errors;
}

export function checkLabelValue(value: unknown, field: string): FieldError[] {
  if (typeof value !== 'string') return [{ field, message: 'label values must be strings' }];
  if (value.length > 63 || !LABEL_VALUE.test(value)) {
    return [
      {
        field,
        message: `value "${value}" must be empty or 1-63 characters of [A-Za-z0-9-_.], starting and ending alphanumeric`,
      },
    ];
  }
  return [];
}

export function checkLabels(labels: unknown, limits: Readonly<GatewayLimits> = LIMITS): FieldError[] {
  if (labels === undefined || labels === null) return [];
  if (!isPlainObject(labels)) return [{ field: 'metadata.labels', message: 'must be a map of string to string' }];
  const count = Object.keys(labels).length;
  if (count > limits.labels) {
    return [{ field: 'metadata.labels', message: `has ${count} labels; at most ${limits.labels} are allowed (limit: labels per object)` }];
  }
  const errors: FieldError[] = [];
  for (const [k, v] of Object.entries(labels)) {
    const field = `metadata.labels[${k}]`;
    errors.push(...checkQualifiedKey(k, field), ...checkLabelValue(v, field));
  }
  return errors;
}

export function checkAnnotations(annotations: unknown, limits: Readonly<GatewayLimits> = LIMITS): FieldError[] {
  if (annotations === undefined || annotations === null) return [];
  if (!isPlainObject(annotations)) {
    return [{ field: 'metadata.annotations', message: 'must be a map of string to string' }];
  }
  const entries = Object.entries(annotations);
  if (entries.length > limits.annotations) {
    return [
      {
        field: 'metadata.annotations',
        message: `has ${entries.length} annotations; at most ${limits.annotations} are allowed (limit: annotations per object)`,
      },
    ];
  }
  let bytes = 0;
  for (const [k, v] of entries) bytes += Buffer.byteLength(k) + (typeof v === 'string' ? Buffer.byteLength(v) : 0);
  if (bytes > limits.annotationBytes) {
    return [
      {
        field: 'metadata.annotations',
        message: `keys and values total ${bytes} bytes; at most ${limits.annotationBytes} are allowed (limit: annotation size)`,
      },
    ];
  }
  const errors: FieldError[] = [];
  for (const [k, v] of entries) {
    const field = `metadata.annotations[${k}]`;
    errors.push(...checkQualifiedKey(k, field));
    if (typeof v !== 'string') errors.push({ field, message: 'annotation values must be strings' });
  }
  return errors;
}

export function checkFinalizers(finalizers: unknown, limits: Readonly<GatewayLimits> = LIMITS): FieldError[] {
  if (finalizers === undefined || finalizers === null) return [];
  if (!Array.isArray(finalizers)) return [{ field: 'metadata.finalizers', message: 'must be an array of strings' }];
  if (finalizers.length > limits.finalizers) {
    return [
      {
        field: 'metadata.finalizers',
        message: `has ${finalizers.length} finalizers; at most ${limits.finalizers} are allowed (limit: finalizers per object)`,
      },
    ];
  }
  const errors: FieldError[] = [];
  finalizers.forEach((f, i) => {
    const field = `metadata.finalizers[${i}]`;
    if (typeof f !== 'string') errors.push({ field, message: 'must be a string' });
    else errors.push(...checkQualifiedKey(f, field));
  });
  return errors;
}

/** Label keys a plugin bundle may use although they sit under svc.run (docs/API.md §3). */
export const PLATFORM_LABEL_KEYS = new Set([
  'svc.run/role-template',
  'svc.run/hidden',
  'rbac.authorization.svc.run/dependencies',
  'rbac.authorization.svc.run/ui-permissions',
  'rbac.authorization.svc.run/module',
  'rbac.authorization.svc.run/display-name',
]);

/** Keys in plugin bundles must be prefixed outside svc.run, except the platform's documented keys. */
export function checkPluginKey(key: string, field: string): FieldError[] {
  if (PLATFORM_LABEL_KEYS.has(key) || key.startsWith('rbac.authorization.svc.run/aggregate-to-')) return [];
  const slash = key.indexOf('/');
  if (slash < 0) return [{ field, message: `key "${key}" must have a prefix (plugins may not use unprefixed keys)` }];
  const prefix = key.slice(0, slash);
  if (prefix === 'svc.run' || prefix.endsWith('.svc.run')) {
    return [{ field, message: `key "${key}" uses the reserved prefix ${prefix}` }];
  }
  return [];
}

export const isReservedGroup = (group: string): boolean =>
  group === '' || group === 'svc.run' || group.endsWith('.svc.run');

export const isDnsSubdomain = (s: string): boolean => s.length <= 253 && DNS_SUBDOMAIN.test(s);
