import { beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { InvalidError, KubernetesSecretStore, SecretNotFoundError } from '@sluice/shared';
import { describeWithKube, testKubeConfig } from './kube.js';

// The secret-store port on Kubernetes Secrets, against the real API server.
describeWithKube('Kubernetes secret store', () => {
  const ns = `sec-${randomUUID().slice(0, 8)}`;
  let store: KubernetesSecretStore;
  beforeAll(async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(testKubeConfig() as string);
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: ns } } });
    store = new KubernetesSecretStore(kc);
  });

  it('puts, replaces data whole, resolves references and lists keys without values', async () => {
    await store.put(
      ns,
      'sluice-connector-a',
      { password: 'p1', key: 'k1' },
      { 'sluice.dev/managed': 'true' },
    );
    await store.put(ns, 'sluice-connector-a', { password: 'p2' }, { 'sluice.dev/managed': 'true' });
    const got = await store.get(ns, 'sluice-connector-a');
    expect(got).toMatchObject({
      name: 'sluice-connector-a',
      data: { password: 'p2' },
      labels: { 'sluice.dev/managed': 'true' },
    });
    expect(got?.data).not.toHaveProperty('key');
    expect(await store.resolve(ns, { name: 'sluice-connector-a', key: 'password' })).toBe('p2');
    await expect(store.resolve(ns, { name: 'sluice-connector-a', key: 'nope' })).rejects.toBeInstanceOf(
      SecretNotFoundError,
    );
    await expect(store.resolve(ns, { name: 'missing', key: 'x' })).rejects.toBeInstanceOf(
      SecretNotFoundError,
    );
    const listed = await store.list(ns);
    expect(listed.find((s) => s.name === 'sluice-connector-a')?.keys).toEqual(['password']);
    expect(JSON.stringify(listed)).not.toContain('p2');
  });

  it('deletes (true once, then false) and refuses an invalid name without echoing values', async () => {
    await store.put(ns, 'gone', { v: 'x' });
    expect(await store.delete(ns, 'gone')).toBe(true);
    expect(await store.delete(ns, 'gone')).toBe(false);
    expect(await store.get(ns, 'gone')).toBeUndefined();
    const err = await store.put(ns, 'Not_A_Name', { v: 'top-secret-value' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidError);
    expect(String((err as Error).message)).not.toContain('top-secret-value');
  });
});
