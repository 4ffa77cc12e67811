import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { Admin } from '@platformatic/kafka';
import { testKafkaBrokers } from '@sluice/testing/kafka';
import { describeWithKube, installCrds, testKubeConfig } from '@sluice/testing/kube';
import { assertWorkerBuilt, WORKER_PROGRAM } from '@sluice/testing/kafka-helpers';
import { configs, createEnv, reachState, SECRETS } from './catalog-fixtures.js';
import { databaseKinds, startTestGateway, type TestGateway, type TestUser } from './harness.js';

// Deleting a team on a real API server (docs/api.md "Deletions"): the gateway
// writes its custom resources and Secrets through the Kubernetes API, and the
// operator's control loop (run in the gateway's process, on that API server,
// with workers as processes) runs a live Kafka → Kafka pipeline on the real
// broker. After DELETE /teams/{id}: the team's objects are gone from reads at
// once; then no custom resource of the team, no managed Secret and no worker
// is left.

const PLURALS = ['pipelines', 'subscriptions', 'datamodels', 'connectors'] as const;

describeWithKube('deleting a team on a real API server, with a live pipeline', () => {
  const brokers = testKafkaBrokers();
  const namespace = `del-${randomUUID().slice(0, 8)}`;
  const kc = new KubeConfig();
  const dbKind = databaseKinds().at(-1)!;
  const saved = { ...process.env };
  let gw: TestGateway;
  let owner: TestUser;
  let su: TestUser;
  let teamId: string;

  beforeAll(async () => {
    if (!brokers) throw new Error('needs SLUICE_TEST_KAFKA_BROKERS (scripts/with-kafka.sh)');
    assertWorkerBuilt();
    const kubeconfig = testKubeConfig() as string;
    kc.loadFromFile(kubeconfig);
    await installCrds(kubeconfig);
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
    process.env.SLUICE_STREAM_BROKERS = brokers.join(',');
    gw = await startTestGateway(dbKind, {
      SLUICE_CLUSTER_ADAPTER: 'kubernetes',
      SLUICE_NAMESPACE: namespace,
      SLUICE_WATCH_NAMESPACES: namespace,
      KUBECONFIG: kubeconfig,
      SLUICE_EMBEDDED_OPERATOR: 'true',
      SLUICE_WORKER_COMMAND: JSON.stringify([process.execPath, WORKER_PROGRAM]),
      SLUICE_SCHEDULER: 'true',
      SLUICE_SCHEDULER_INTERVAL_MS: '500',
    });
    owner = await gw.user();
    su = await gw.superuser();
    const envId = await createEnv(gw, owner, `env-${namespace}`);
    teamId = (await gw.http.post(`/api/teams/?env_id=${envId}`).set(owner.auth).send({ name: 'doomed' })).body
      .id as string;
  }, 120_000);
  afterAll(async () => {
    await gw?.close();
    process.env = saved;
  });

  const custom = () => kc.makeApiClient(CustomObjectsApi);
  const teamObjects = async () => {
    const out: string[] = [];
    for (const plural of PLURALS) {
      const list = (await custom().listNamespacedCustomObject({
        group: 'sluice.dev',
        version: 'v1alpha1',
        namespace,
        plural,
        labelSelector: `sluice.dev/team-id=${teamId}`,
      })) as { items: { metadata: { name: string } }[] };
      out.push(...list.items.map((i) => `${plural}/${i.metadata.name}`));
    }
    return out;
  };
  const managedSecrets = async () =>
    (await kc.makeApiClient(CoreV1Api).listNamespacedSecret({ namespace })).items
      .map((s) => s.metadata?.name ?? '')
      .filter((n) => n.startsWith('sluice-'));
  const workers = () => {
    const dir = join(gw.dataDir, 'workers');
    return existsSync(dir) ? readdirSync(dir) : [];
  };

  it('DELETE /teams/{id}: 204 and gone from reads; then no custom resource, managed Secret or worker of the team is left', async () => {
    const run = randomUUID().slice(0, 8);
    const topic = `kube-del-${run}`;
    const admin = new Admin({ clientId: 'sluice-test-admin', bootstrapBrokers: brokers! });
    try {
      await admin.createTopics({ topics: [topic], partitions: 1, replicas: 1 });
    } finally {
      await admin.close();
    }
    const pipeline = await gw.http
      .post('/api/pipelines/')
      .set(owner.auth)
      .send({
        name: `kube-${run}`,
        team_id: teamId,
        source_name: `kube-src-${run}`,
        source_type: 'KAFKA_SOURCE',
        source_config: { topic, bootstrap_servers: brokers!.join(',') },
        target_name: `kube-dst-${run}`,
        target_type: 'KAFKA_TARGET',
        target_config: { bootstrap_server: brokers!.join(',') },
        subscription_target_table_name: `kube-out-${run}`,
        // An encrypting rule: its passphrase goes into the subscription's managed Secret.
        subscription_mapper_config: [
          { key: 'id', path: 'id', cast: 'int', primary_key: true },
          { key: 'email', path: 'email', encrypt_method: 'aes-256-gcm', encrypt_key: SECRETS.mapperKey },
        ],
      });
    expect(pipeline.status).toBe(201);
    const id = pipeline.body.id as string;
    // A connector of its own with an inline password: a managed Secret on the API server.
    const standalone = await gw.http
      .post('/api/connectors/')
      .set(owner.auth)
      .send({
        name: `dwh-${run}`,
        team_id: teamId,
        connector_type: 'POSTGRES_TARGET',
        json_configuration: configs.pgTarget(),
      });
    expect(standalone.status).toBe(201);
    expect((await gw.http.post(`/api/pipelines/${id}/start`).set(owner.auth)).status).toBe(202);
    await reachState(gw, owner, `/api/pipelines/${id}`, 'live', 120_000);
    expect(workers()).toHaveLength(2);
    expect(await managedSecrets()).toEqual(
      expect.arrayContaining([
        `sluice-connector-${standalone.body.id}`,
        `sluice-subscription-${pipeline.body.subscription_id}`,
      ]),
    );
    expect((await teamObjects()).length).toBe(6);

    expect((await gw.http.delete(`/api/teams/${teamId}`).set(owner.auth)).status).toBe(204);
    expect((await gw.http.get(`/api/pipelines/${id}`).set(su.auth)).status).toBe(404);
    for (const plural of PLURALS) {
      expect((await gw.http.get(`/api/${plural}/`).set(su.auth)).body.items).toEqual([]);
    }
    const [deletion] = (await gw.http.get('/api/deletions/').set(su.auth)).body.items;
    expect(deletion).toMatchObject({ kind: 'team', target_id: teamId });
    const deadline = Date.now() + 120_000;
    let body: Record<string, unknown>;
    for (;;) {
      body = (await gw.http.get(`/api/deletions/${deletion.id}`).set(su.auth)).body;
      if (body.state === 'succeeded' || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(body).toMatchObject({
      state: 'succeeded',
      progress: {
        pipelines: { total: 1, deleted: 1 },
        subscriptions: { total: 1, deleted: 1 },
        datamodels: { total: 1, deleted: 1 },
        connectors: { total: 3, deleted: 3 },
      },
    });
    expect(await teamObjects()).toEqual([]);
    expect(await managedSecrets()).toEqual([]);
    expect(workers()).toEqual([]);
  }, 300_000);
});
