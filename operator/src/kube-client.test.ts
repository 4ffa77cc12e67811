import { describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';

// The real, ESM-only client must load in our test runtime (ESM jest on Node 24):
// this is the reason the project is ESM (docs/architecture.md).
describe('@kubernetes/client-node', () => {
  it('loads and builds a typed API client from a kubeconfig', () => {
    const kc = new k8s.KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: 'https://127.0.0.1:6443', skipTLSVerify: true }],
      users: [{ name: 'u', token: 't' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    const api = kc.makeApiClient(k8s.CustomObjectsApi);
    expect(api).toBeInstanceOf(k8s.CustomObjectsApi);
    expect(kc.getCurrentCluster()?.server).toBe('https://127.0.0.1:6443');
  });
});
