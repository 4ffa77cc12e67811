import { isSecretRef } from '@sluice/shared/connectors';
import { secretEnvName, secretFromEnv } from '@sluice/shared/secrets';

// A worker never reads a secret store: every runtime hands it the values of
// the references in its configuration as environment variables named by
// `secretEnvName` (Kubernetes from the Secret, the process runtime from the
// embedded store). Values are substituted in memory only and never logged.

/** Thrown when the runtime did not provide a referenced value; names the reference, never a value. */
export class MissingSecretError extends Error {
  override readonly name = 'MissingSecretError';
}

/** A copy of `value` with every `valueFrom` reference replaced by its value. */
export function resolveSecrets<T>(value: T, env: NodeJS.ProcessEnv = process.env): T {
  const visit = (v: unknown): unknown => {
    if (isSecretRef(v)) {
      const ref = v.valueFrom.secretKeyRef;
      const found = secretFromEnv(ref, env);
      if (found === undefined) {
        throw new MissingSecretError(
          `the value of secret "${ref.name}" key "${ref.key}" was not given to the worker (${secretEnvName(ref)})`,
        );
      }
      return found;
    }
    if (Array.isArray(v)) return v.map(visit);
    if (v && typeof v === 'object')
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, visit(x)]));
    return v;
  };
  return visit(value) as T;
}
