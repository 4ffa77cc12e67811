import { setupTeam, type TeamSetup } from './catalog-fixtures.js';
import type { TestGateway, TestUser } from './harness.js';
import { startRecordingListener, type RecordingListener } from './recording-listener.js';

// What the secret grant suites share (docs/security.md, "Secret references"),
// on either cluster adapter.

/** A reference to key `key` of the secret `name`, as a connector's configuration carries it. */
export const secretRef = (name: string, key: string) => ({ valueFrom: { secretKeyRef: { name, key } } });

/** The names of the secrets `GET /k8s-secrets` lists for `u` (those it may use). */
export async function secretNames(gw: TestGateway, u: TestUser): Promise<string[]> {
  return ((await gw.http.get('/api/k8s-secrets').set(u.auth)).body as { name: string }[]).map((s) => s.name);
}

/**
 * A superuser, two teams (`<prefix>-a`, `<prefix>-b`) in environments of
 * their own, and a local listener standing for the webhook a check reaches.
 */
export interface GrantSetup {
  admin: TestUser;
  a: TeamSetup;
  b: TeamSetup;
  hook: RecordingListener;
}

export async function startGrantSetup(gw: TestGateway, prefix: string): Promise<GrantSetup> {
  const admin = await gw.superuser();
  const a = await setupTeam(gw, `${prefix}-a`);
  const b = await setupTeam(gw, `${prefix}-b`);
  const hook = await startRecordingListener();
  return { admin, a, b, hook };
}
