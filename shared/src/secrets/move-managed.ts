import { MANAGED_SECRET_LABEL, type SecretStorePort, type SecretSummary } from '../ports/secret-store.js';
import { isControlPlaneSecret } from './grants.js';

// Moving the managed secrets of an install whose workers shared the control
// plane's namespace into the worker namespace (docs/security.md, "Worker
// namespace"). Only what Sluice wrote for its objects moves: the label
// `sluice.dev/managed: "true"` and a managed name of an object kind, never a
// control-plane Secret (the chart's `sluice-keys` of a release named
// `sluice` starts with `sluice-` too) nor a Secret a user made.

const MANAGED_NAME = /^sluice-(connector|subscription|warehouse)-/;

/**
 * A secret Sluice wrote for one of its objects: labelled managed, named for an
 * object kind, never a control-plane one. What a move takes along and what
 * an uninstall removes (charts/sluice/README.md, "Uninstalling").
 */
export const isObjectSecret = (s: Pick<SecretSummary, 'name' | 'labels'>): boolean =>
  s.labels[MANAGED_SECRET_LABEL] === 'true' && MANAGED_NAME.test(s.name) && !isControlPlaneSecret(s);

export interface ManagedSecretsMove {
  /** Copied to the worker namespace (absent there before). */
  copied: string[];
  /** Deleted from the old namespace (copied, or already in the worker namespace: that one is newer). */
  deleted: string[];
}

/**
 * Every managed secret of `from` missing in `to` is copied there (data,
 * labels, annotations), then each is deleted from `from`. A secret already in
 * `to` was written there by a gateway of the new layout: it wins. Safe to run
 * again after an interruption; nothing to do when `from` is `to`.
 */
export async function moveManagedSecrets(
  store: SecretStorePort,
  from: string,
  to: string,
): Promise<ManagedSecretsMove> {
  const out: ManagedSecretsMove = { copied: [], deleted: [] };
  if (from === to) return out;
  const managed = (await store.list(from)).filter(isObjectSecret);
  for (const { name } of managed) {
    const old = await store.get(from, name);
    if (!old) continue;
    if (!(await store.get(to, name))) {
      await store.put(to, name, old.data, { labels: old.labels, annotations: old.annotations });
      out.copied.push(name);
    }
    if (await store.delete(from, name)) out.deleted.push(name);
  }
  return out;
}
