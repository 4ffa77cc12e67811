import { SLUICE_KINDS, type OwnerReference, type SluiceKind } from '../ports/cluster.js';
import { InvalidError } from './errors.js';
import { isJsonObject } from './json.js';

// The regular expressions of k8s.io/apimachinery/pkg/util/validation.
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const QUALIFIED_NAME_PART = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;

export function assertKind(kind: unknown): asserts kind is SluiceKind {
  if (!(SLUICE_KINDS as readonly unknown[]).includes(kind)) {
    throw new InvalidError(`kind ${JSON.stringify(kind)} is not one of ${SLUICE_KINDS.join(', ')}`);
  }
}

/** Object names: a DNS-1123 subdomain (a UUID is one), as for custom resources. */
export function assertName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || name.length > 253 || !DNS1123_SUBDOMAIN.test(name)) {
    throw new InvalidError(`metadata.name ${JSON.stringify(name)} is not a DNS-1123 subdomain`);
  }
}

/** A namespace name: a DNS-1123 label (also what the namespace settings must be). */
export const isNamespaceName = (s: string): boolean => s.length <= 63 && DNS1123_LABEL.test(s);

export function assertNamespace(namespace: unknown): asserts namespace is string {
  if (typeof namespace !== 'string' || !isNamespaceName(namespace)) {
    throw new InvalidError(`metadata.namespace ${JSON.stringify(namespace)} is not a DNS-1123 label`);
  }
}

/** `[prefix/]name`: label keys, annotation keys and finalizers all take this form. */
export function isQualifiedName(key: string): boolean {
  const slash = key.lastIndexOf('/');
  const [prefix, name] = slash < 0 ? [undefined, key] : [key.slice(0, slash), key.slice(slash + 1)];
  if (
    prefix !== undefined &&
    (prefix.length === 0 || prefix.length > 253 || !DNS1123_SUBDOMAIN.test(prefix))
  ) {
    return false;
  }
  return name.length <= 63 && QUALIFIED_NAME_PART.test(name);
}

export function isLabelValue(value: string): boolean {
  return value === '' || (value.length <= 63 && QUALIFIED_NAME_PART.test(value));
}

export function checkLabels(labels: unknown): Record<string, string> {
  const map = checkStringMap(labels, 'metadata.labels');
  for (const [key, value] of Object.entries(map)) {
    if (!isQualifiedName(key))
      throw new InvalidError(`metadata.labels: ${JSON.stringify(key)} is not a label key`);
    if (!isLabelValue(value)) {
      throw new InvalidError(`metadata.labels[${key}]: ${JSON.stringify(value)} is not a label value`);
    }
  }
  return map;
}

export function checkAnnotations(annotations: unknown): Record<string, string> {
  const map = checkStringMap(annotations, 'metadata.annotations');
  for (const key of Object.keys(map)) {
    if (!isQualifiedName(key)) {
      throw new InvalidError(`metadata.annotations: ${JSON.stringify(key)} is not an annotation key`);
    }
  }
  return map;
}

/** Owner references as the API server accepts them: each names an owner by kind, name and uid. */
export function checkOwnerReferences(refs: unknown): OwnerReference[] {
  if (refs === undefined || refs === null) return [];
  const ok = (r: unknown): r is OwnerReference =>
    isJsonObject(r) &&
    ['apiVersion', 'kind', 'name', 'uid'].every((k) => typeof r[k] === 'string' && r[k] !== '') &&
    ['controller', 'blockOwnerDeletion'].every((k) => r[k] === undefined || typeof r[k] === 'boolean');
  if (!Array.isArray(refs) || !refs.every(ok)) {
    throw new InvalidError('metadata.ownerReferences must be a list of {apiVersion, kind, name, uid}');
  }
  return refs.map(({ apiVersion, kind, name, uid, controller, blockOwnerDeletion }) => ({
    apiVersion,
    kind,
    name,
    uid,
    ...(controller !== undefined ? { controller } : {}),
    ...(blockOwnerDeletion !== undefined ? { blockOwnerDeletion } : {}),
  }));
}

export function checkFinalizers(finalizers: unknown): string[] {
  if (finalizers === undefined || finalizers === null) return [];
  if (!Array.isArray(finalizers) || !finalizers.every((f) => typeof f === 'string' && isQualifiedName(f))) {
    throw new InvalidError('metadata.finalizers must be a list of qualified names');
  }
  // Kubernetes keeps one of each.
  return [...new Set(finalizers as string[])];
}

function checkStringMap(value: unknown, field: string): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (!isJsonObject(value) || !Object.values(value).every((v) => typeof v === 'string')) {
    throw new InvalidError(`${field} must be a map of strings`);
  }
  return { ...(value as Record<string, string>) };
}

/** `/^\d+$/` without leading zeros, as a bigint. */
export function parseResourceVersion(rv: unknown, field = 'resourceVersion'): bigint {
  if (typeof rv !== 'string' || !/^(0|[1-9]\d*)$/.test(rv)) {
    throw new InvalidError(`${field} ${JSON.stringify(rv)} is not a resource version`);
  }
  return BigInt(rv);
}
