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
  /** Its secret fields (`secretPaths(type)`). */
  secretFields: readonly string[];
  /** The stored configuration before this write (an update), if any. */
  previous?: Record<string, unknown> | null;
  /** The managed secret of this resource (`sluice-…`): where inline values go. */
  secretName: string;
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
}: ExternalizeInput): ExternalizeResult {
  const out = structuredClone(config);
  const data: Record<string, string> = {};
  const retained: string[] = [];
  const issues: SecretIssue[] = [];
  for (const field of secretFields) {
    if (!Object.hasOwn(config, field)) continue;
    const value = config[field];
    if (value === REDACTED) {
      const before = previous?.[field];
      if (isSecretRef(before)) {
        out[field] = structuredClone(before);
        const ref = before.valueFrom.secretKeyRef;
        if (ref.name === secretName) retained.push(ref.key);
      } else {
        issues.push({
          loc: [field],
          msg: `"${REDACTED}" keeps a stored value, and there is none for this field: send the value or a valueFrom reference`,
          type: 'missing',
        });
      }
    } else if (typeof value === 'string') {
      out[field] = managedRef(secretName, field);
      data[field] = value;
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
  for (const field of secretFields) {
    if (!Object.hasOwn(config, field)) continue;
    const value = config[field];
    if (typeof value === 'string') out[field] = REDACTED;
    else if (isSecretRef(value) && value.valueFrom.secretKeyRef.name === managedSecretName) {
      out[field] = REDACTED;
    }
  }
  return out;
}
