import { secretEnvName, secretFromEnv, withSecretValues } from '@sluice/shared/secrets';

// A worker never reads a secret store: every runtime hands it the values of
// the references in its configuration as environment variables named by
// `secretEnvName` (Kubernetes from the Secret, the process runtime from the
// embedded store). Values are substituted in memory only and never logged.

/** A copy of `value` with every `valueFrom` reference replaced by its value from the environment. */
export function resolveSecrets<T>(value: T, env: NodeJS.ProcessEnv = process.env): T {
  return withSecretValues(
    value,
    (ref) => secretFromEnv(ref, env),
    (ref) =>
      `the value of secret "${ref.name}" key "${ref.key}" was not given to the worker (${secretEnvName(ref)})`,
  );
}
