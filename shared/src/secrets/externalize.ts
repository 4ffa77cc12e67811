import { createHash } from 'node:crypto';
import { isSecretRef, type SecretRef } from '../connectors/secret.js';
import { REDACTED } from '../schemas/common.js';

// Spec 2.14: an inline value of a secret field never stays in a resource. On
// a write the catalog moves it into the resource's managed secret and keeps a
// reference; every read shows `<redacted>` in its place; a write that sends
// `<redacted>` back keeps what is stored. References the user wrote point at
// secrets of their own and hold no value, so they stay visible.

/** A 422 item, located relative to the configuration (the caller prefixes its own path). */
export interface SecretIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
}

export interface ExternalizeInput {
  /** The configuration as written by the client. */
  config: Record<string, unknown>;
  /** Its secret fields (`secretPaths(type)`; `name.*` for each value of the map `name`). */
  secretFields: readonly string[];
  /** The stored configuration before this write (an update), if any. */
  previous?: Record<string, unknown> | null;
  /** The managed secret of this resource (`sluice-…`): where inline values go. */
  secretName: string;
  /**
   * A field that says where the credentials are sent (host, URL, brokers…)
   * and differs from the stored one (`changedDestination`): `<redacted>`
   * may then keep nothing, or a stored password would follow a new host.
   */
  changedDestination?: string;
}

/** One place of a configuration that holds a secret: a field, or one value of a secret map. */
export interface SecretSlot {
  loc: string[];
  /** Its key in the managed secret. */
  key: string;
  value: unknown;
}

/** A key of a Secret's `data`, as the managed secret names map values. */
const KEY = /^[-._a-zA-Z0-9]+$/;

function mapKey(field: string, name: string): string {
  const plain = `${field}.${name}`;
  if (plain.length <= 253 && KEY.test(plain)) return plain;
  return `${field}-${createHash('sha256').update(name).digest('hex').slice(0, 16)}`;
}

/** Every secret slot `config` has, in the order of `secretFields` (absent fields have none). */
export function secretSlots(config: Record<string, unknown>, secretFields: readonly string[]): SecretSlot[] {
  const out: SecretSlot[] = [];
  for (const field of secretFields) {
    if (field.endsWith('.*')) {
      const map = field.slice(0, -2);
      const values = config[map];
      if (!values || typeof values !== 'object' || Array.isArray(values)) continue;
      for (const [name, value] of Object.entries(values)) {
        out.push({ loc: [map, name], key: mapKey(map, name), value });
      }
    } else if (Object.hasOwn(config, field)) {
      out.push({ loc: [field], key: field, value: config[field] });
    }
  }
  return out;
}

/** The value at a secret field's location (`secretSlots`' `loc`); undefined when a part is missing. */
export function valueAt(config: Record<string, unknown> | null | undefined, loc: string[]): unknown {
  let v: unknown = config;
  for (const part of loc) {
    if (!v || typeof v !== 'object' || Array.isArray(v) || !Object.hasOwn(v, part)) return undefined;
    v = (v as Record<string, unknown>)[part];
  }
  return v;
}

/** Sets the value at a secret field's location, whose parents exist. */
export function setAt(config: Record<string, unknown>, loc: string[], value: unknown): void {
  let v = config;
  for (const part of loc.slice(0, -1)) v = v[part] as Record<string, unknown>;
  v[loc[loc.length - 1] as string] = value;
}

export interface ExternalizeResult {
  /** The configuration to store: every secret field absent, a user reference, or a reference to the managed secret. */
  config: Record<string, unknown>;
  /** New values for the managed secret, by key (= field name). */
  data: Record<string, string>;
  /**
   * Keys of the managed secret whose stored values the new configuration
   * still points at (`<redacted>` sent back): carry them over when the secret
   * is replaced, `put(ns, name, {...pick(stored.data, retained), ...data})`.
   */
  retained: string[];
  /** Empty when the configuration can be stored. */
  issues: SecretIssue[];
}

function managedRef(secretName: string, key: string): SecretRef {
  return { valueFrom: { secretKeyRef: { name: secretName, key } } };
}

export function externalizeSecrets({
  config,
  secretFields,
  previous,
  secretName,
  changedDestination,
}: ExternalizeInput): ExternalizeResult {
  const out = structuredClone(config);
  const data: Record<string, string> = {};
  const retained: string[] = [];
  const issues: SecretIssue[] = [];
  for (const { loc, key, value } of secretSlots(config, secretFields)) {
    if (value === REDACTED) {
      const before = valueAt(previous, loc);
      if (changedDestination !== undefined && isSecretRef(before)) {
        issues.push({
          loc,
          msg: `"${REDACTED}" cannot keep the stored value: ${loc.join('.')} is required again because ${changedDestination} changed (send the value or a valueFrom reference)`,
          type: 'missing',
        });
      } else if (isSecretRef(before)) {
        setAt(out, loc, structuredClone(before));
        const ref = before.valueFrom.secretKeyRef;
        if (ref.name === secretName) retained.push(ref.key);
      } else {
        issues.push({
          loc,
          msg: `"${REDACTED}" keeps a stored value, and there is none for this field: send the value or a valueFrom reference`,
          type: 'missing',
        });
      }
    } else if (typeof value === 'string') {
      setAt(out, loc, managedRef(secretName, key));
      data[key] = value;
    }
    // A user's valueFrom reference (and anything else, which validation judges) stays as it is.
  }
  return { config: out, data, retained, issues };
}

/**
 * A copy of a stored configuration fit for a response: references to the
 * resource's managed secret (and any inline value that slipped through) read
 * `<redacted>`; references to the user's own secrets stay as written.
 */
export function redactSecrets(
  config: Record<string, unknown>,
  secretFields: readonly string[],
  managedSecretName: string,
): Record<string, unknown> {
  const out = structuredClone(config);
  for (const { loc, value } of secretSlots(config, secretFields)) {
    if (typeof value === 'string') setAt(out, loc, REDACTED);
    else if (isSecretRef(value) && value.valueFrom.secretKeyRef.name === managedSecretName) {
      setAt(out, loc, REDACTED);
    }
  }
  return out;
}
