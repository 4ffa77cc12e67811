// What a worker child process inherits from the process that starts it (the
// gateway in `make run`, or the operator). Not everything: that environment
// holds the service's own secrets (database URL, master key, JWT secret,
// admin password, SMTP URL), and a worker needs none of them — its secret
// values come one by one as SLUICE_SECRET_<hash> variables (worker-env.ts).
// So: an allow-list of the basics and of Sluice's non-secret settings.

const BASICS = new Set([
  'PATH',
  'HOME',
  'TMPDIR',
  'TZ',
  'LANG',
  'LANGUAGE',
  'NODE_EXTRA_CA_CERTS',
  'NODE_OPTIONS',
  'LOG_LEVEL',
]);

/** SLUICE_ settings that are secrets of the service itself. */
const SERVICE_SECRETS = new Set([
  'SLUICE_ADMIN_PASSWORD',
  'SLUICE_JWT_SECRET',
  'SLUICE_MASTER_KEY',
  'SLUICE_TEST_DATABASE_URL',
]);

export function inheritedWorkerEnv(parent: NodeJS.ProcessEnv): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(parent)) {
    if (value === undefined) continue;
    const sluice =
      name.startsWith('SLUICE_') && !SERVICE_SECRETS.has(name) && !name.startsWith('SLUICE_SECRET_');
    if (BASICS.has(name) || name.startsWith('LC_') || sluice) env[name] = value;
  }
  return env;
}
