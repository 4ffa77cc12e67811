import { beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { InvalidError } from '@sluice/shared/cluster';
import { SecretNotFoundError, SecretNotGrantedError, type SecretScope } from '@sluice/shared/ports';
import { KubernetesSecretStore } from '@sluice/shared/secrets';
import { describeWithKube, testKubeConfig } from '@sluice/testing/kube';

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

  const own: SecretScope = { teamIds: [], envIds: [], ownSecrets: ['sluice-connector-a'] };
  it('puts, replaces data whole, resolves references and lists keys without values', async () => {
    const managed = { labels: { 'sluice.dev/managed': 'true' } };
    await store.put(ns, 'sluice-connector-a', { password: 'p1', key: 'k1' }, managed);
    await store.put(ns, 'sluice-connector-a', { password: 'p2' }, managed);
    const got = await store.get(ns, 'sluice-connector-a');
    expect(got).toMatchObject({
      name: 'sluice-connector-a',
      data: { password: 'p2' },
      labels: { 'sluice.dev/managed': 'true' },
    });
    expect(got?.data).not.toHaveProperty('key');
    expect(await store.resolve(ns, { name: 'sluice-connector-a', key: 'password' }, own)).toBe('p2');
    await expect(store.resolve(ns, { name: 'sluice-connector-a', key: 'nope' }, own)).rejects.toBeInstanceOf(
      SecretNotFoundError,
    );
    await expect(store.resolve(ns, { name: 'missing', key: 'x' }, own)).rejects.toBeInstanceOf(
      SecretNotGrantedError,
    );
    // Another object's managed secret is refused.
    await expect(
      store.resolve(ns, { name: 'sluice-connector-a', key: 'password' }, { ...own, ownSecrets: [] }),
    ).rejects.toBeInstanceOf(SecretNotGrantedError);
    const listed = await store.list(ns);
    expect(listed.find((s) => s.name === 'sluice-connector-a')?.keys).toEqual(['password']);
    expect(JSON.stringify(listed)).not.toContain('p2');
  });

  it('carries the grant in the annotations, as kubectl annotate writes it', async () => {
    const team = '7d1e2f3a-4b5c-4d6e-8f90-a1b2c3d4e5f6';
    const scope: SecretScope = { teamIds: [team], envIds: [], ownSecrets: [] };
    await store.put(ns, 'granted', { pw: 'g1' }, { annotations: { 'sluice.dev/allowed-teams': team } });
    expect((await store.get(ns, 'granted'))?.annotations).toEqual({ 'sluice.dev/allowed-teams': team });
    expect((await store.list(ns)).find((s) => s.name === 'granted')?.annotations).toEqual({
      'sluice.dev/allowed-teams': team,
    });
    expect(await store.resolve(ns, { name: 'granted', key: 'pw' }, scope)).toBe('g1');
    await expect(
      store.resolve(ns, { name: 'granted', key: 'pw' }, { ...scope, teamIds: ['other'] }),
    ).rejects.toBeInstanceOf(SecretNotGrantedError);
    // A control-plane Secret is never usable, whatever its annotations.
    await store.put(
      ns,
      'prod-sluice-keys',
      { 'jwt-secret': 'k' },
      { labels: { 'sluice.dev/control-plane': 'true' }, annotations: { 'sluice.dev/allowed-teams': team } },
    );
    await expect(
      store.resolve(ns, { name: 'prod-sluice-keys', key: 'jwt-secret' }, { ...scope, anyGrant: true }),
    ).rejects.toBeInstanceOf(SecretNotGrantedError);
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
