import type { Db } from '../../db/database.js';
import { pingDatabase } from './health.repository.js';

export interface ClusterProbe {
  adapter: 'embedded' | 'kubernetes';
  /** Resolves when the cluster API answers; rejects with a message a user may see. */
  check(): Promise<void>;
}

/**
 * The embedded cluster keeps its objects in the service database, so it is
 * reachable exactly when the database is. The Kubernetes adapter asks the API
 * server for its version with the in-cluster (or kubeconfig) credentials.
 */
export function clusterProbe(adapter: 'embedded' | 'kubernetes', db: Db): ClusterProbe {
  if (adapter === 'embedded') {
    return { adapter, check: () => pingDatabase(db) };
  }
  return {
    adapter,
    check: async () => {
      const k8s = await import('@kubernetes/client-node');
      const kc = new k8s.KubeConfig();
      kc.loadFromDefault();
      await kc.makeApiClient(k8s.VersionApi).getCode();
    },
  };
}
