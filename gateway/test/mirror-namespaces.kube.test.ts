import { afterAll, beforeAll, expect, it, jest } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import {
  CoreV1Api,
  KubeConfig,
  KubernetesObjectApi,
  loadAllYaml,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { pino } from 'pino';
import { type ConnectorResource } from '@sluice/shared/catalog';
import { KubernetesCluster } from '@sluice/shared/cluster';
import { SLUICE_KINDS } from '@sluice/shared/ports';
import { MirrorSync } from '../src/mirror/sync.js';
import { describeWithKube, installCrds, testKubeConfig } from '@sluice/testing/kube';
import { configs, createConnector, setupTeam, type TeamSetup } from './catalog-fixtures.js';
import { databaseKinds, startTestGateway, type TestGateway } from './harness.js';

// The mirror covers every watched namespace (SLUICE_WATCH_NAMESPACES, the
// chart's rbac.extraNamespaces): objects applied with a Kubernetes client (as
// `kubectl apply` does) in the release namespace and in an extra one appear
// in the REST API; a third, unwatched namespace does not; ids clash by the
// documented rule (docs/architecture.md, "Ids across namespaces"); writes by
// id go to the object's own namespace.
const EXAMPLE_TEAM = '3f1c9a52-6d7e-4b8f-9a0b-1c2d3e4f5a6b';

describeWithKube('the mirror across watched namespaces, on a real API server', () => {
  const tag = randomUUID().slice(0, 6);
  const [home, extra, other] = [`home-${tag}`, `extra-${tag}`, `other-${tag}`];
  const kc = new KubeConfig();
  let objects: KubernetesObjectApi;
  let gw: TestGateway;
  let t: TeamSetup;
  const syncs: MirrorSync[] = [];
  // PostgreSQL when the wrappers started one, as in production; else PGlite.
  const dbKind = databaseKinds().at(-1)!;

  beforeAll(async () => {
    const kubeconfig = testKubeConfig() as string;
    kc.loadFromFile(kubeconfig);
    await installCrds(kubeconfig);
    for (const name of [home, extra, other]) {
      await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name } } });
    }
    objects = KubernetesObjectApi.makeApiClient(kc);
    gw = await startTestGateway(dbKind, {
      SLUICE_CLUSTER_ADAPTER: 'kubernetes',
      SLUICE_NAMESPACE: home,
      SLUICE_WATCH_NAMESPACES: `${home},${extra}`,
      KUBECONFIG: kubeconfig,
    });
    t = await setupTeam(gw, 'namespaces');
  }, 60_000);
  afterAll(async () => {
    for (const s of syncs) await s.stop();
    await gw?.close();
  });

  /** A connector manifest as a user writes it: a UUID name, the team, a Kafka source. */
  const connector = (namespace: string, id: string, name: string): KubernetesObject & ConnectorResource => ({
    apiVersion: 'sluice.dev/v1alpha1',
    kind: 'Connector',
    metadata: { name: id, namespace, labels: { 'sluice.dev/team-id': t.teamId } },
    spec: {
      name,
      teamId: t.teamId,
      connectorType: 'KAFKA_SOURCE',
      configuration: { topic: name, bootstrap_servers: 'kafka-0.kafka:9092' },
      desiredState: 'stopped',
    },
  });
  const apply = (o: KubernetesObject) => objects.create(o);
  const read = (namespace: string, kind: string, name: string) =>
    objects
      .read({ apiVersion: 'sluice.dev/v1alpha1', kind, metadata: { name, namespace } })
      .then((o) => o as unknown as ConnectorResource)
      .catch((err: unknown) => {
        if ((err as { code?: number }).code === 404) return undefined;
        throw err;
      });
  const get = (path: string) => gw.http.get(path).set(t.owner.auth);
  const names = async (path: string) =>
    ((await get(path)).body as { items: { name: string }[] }).items.map((i) => i.name).sort();

  it('lists objects applied in the release and the extra namespace, not those of an unwatched one', async () => {
    const [inHome, inExtra, twin] = [randomUUID(), randomUUID(), randomUUID()];
    await apply(connector(home, inHome, 'home-orders'));
    await apply(connector(extra, inExtra, 'extra-orders'));
    // An unwatched namespace: alone, and with the same id as a watched object.
    await apply(connector(other, twin, 'other-orders'));
    await apply(connector(other, inExtra, 'other-copy'));
    // A whole pipeline, applied in the extra namespace.
    const text = readFileSync(
      resolve(import.meta.dirname, '../../examples/kafka-to-kafka-pipeline.yaml'),
      'utf8',
    );
    for (const doc of loadAllYaml(text.replaceAll(EXAMPLE_TEAM, t.teamId)) as KubernetesObject[]) {
      await apply({ ...doc, metadata: { ...doc.metadata, namespace: extra } });
    }
    await gw.ctx.mirror.settled();

    expect(await names(`/api/connectors/?team_id=${t.teamId}`)).toEqual([
      'extra-orders',
      'home-orders',
      'orders-in',
      'orders-out',
    ]);
    expect((await get(`/api/connectors/${twin}`)).status).toBe(404);
    expect((await get(`/api/connectors/${inExtra}`)).body).toMatchObject({ name: 'extra-orders' });
    const pipelines = (await get('/api/pipelines/')).body as { items: { id: string; name: string }[] };
    expect(pipelines.items.map((p) => p.name)).toEqual(['orders-copy']);
    expect((await get(`/api/pipelines/${pipelines.items[0]!.id}`)).body).toMatchObject({
      source_name: 'orders-in',
      target_name: 'orders-out',
    });
    expect(await names('/api/subscriptions/')).toEqual(['orders-copy']);
  });

  it('keeps an id for the object mirrored first, logs the clash naming both, and hands it over when that one goes', async () => {
    const id = randomUUID();
    await apply(connector(home, id, 'original'));
    await gw.ctx.mirror.settled();
    // The manifest copied into the extra namespace under another display name.
    await apply(connector(extra, id, 'copy'));
    await gw.ctx.mirror.settled();
    expect((await get(`/api/connectors/${id}`)).body).toMatchObject({ name: 'original' });
    expect(await names(`/api/connectors/?team_id=${t.teamId}`)).not.toContain('copy');
    const warnings = gw
      .recorded()
      .logs.filter((l) => l.includes(id) && l.includes('is not shown by the API'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(`${extra}/${id}`);
    expect(warnings[0]).toContain(`${home}/${id}`);
    // A change of the copy is reported no more (once per clash) and changes nothing shown.
    await new KubernetesCluster({ kubeConfig: kc }).patch('Connector', extra, id, {
      spec: { name: 'copy-2' },
    });
    await gw.ctx.mirror.settled();
    expect((await get(`/api/connectors/${id}`)).body).toMatchObject({ name: 'original' });
    expect(
      gw.recorded().logs.filter((l) => l.includes('is not shown by the API') && l.includes(id)),
    ).toHaveLength(1);

    await objects.delete({
      apiVersion: 'sluice.dev/v1alpha1',
      kind: 'Connector',
      metadata: { name: id, namespace: home },
    });
    await gw.ctx.mirror.settled();
    const deadline = Date.now() + 5_000;
    let shown = await get(`/api/connectors/${id}`);
    while (shown.body?.name !== 'copy-2' && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      shown = await get(`/api/connectors/${id}`);
    }
    expect(shown.body).toMatchObject({ name: 'copy-2' });
  });

  it('keeps references within one namespace: API creates in the release one, pipeline switches in their own', async () => {
    // The data model applied in the extra namespace; the target created through the API, in the release one.
    const target = await createConnector(
      gw,
      t.owner,
      t.teamId,
      'home-target',
      'KAFKA_TARGET',
      configs.kafkaTarget(),
    );
    const res = await gw.http.post('/api/subscriptions/').set(t.owner.auth).send({
      datamodel_id: '0b6f7a7e-8c1d-4f5e-9a3b-1c2d3e4f5a63',
      target_connector_id: target.id,
      mapper_config: [],
    });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      expect.objectContaining({
        loc: ['body', 'datamodel_id'],
        msg: expect.stringContaining(`namespace "${extra}"`),
      }),
    ]);
    // Only the one applied with the pipeline.
    expect(await names('/api/subscriptions/')).toEqual(['orders-copy']);

    // The pipeline of the extra namespace may not be switched to the release namespace's target…
    const pipelineId = '0b6f7a7e-8c1d-4f5e-9a3b-1c2d3e4f5a65';
    const switched = await gw.http
      .patch(`/api/pipelines/${pipelineId}`)
      .set(t.owner.auth)
      .send({ existing_target_id: target.id });
    expect(switched.status).toBe(422);
    expect(switched.body.detail).toEqual([
      expect.objectContaining({
        loc: ['body', 'existing_target_id'],
        msg: expect.stringContaining(`namespace "${home}", not "${extra}"`),
      }),
    ]);
    const unchanged = (await read(extra, 'Pipeline', pipelineId)) as unknown as {
      spec: { targetConnectorId: string; name: string };
    };
    expect(unchanged.spec.targetConnectorId).toBe('0b6f7a7e-8c1d-4f5e-9a3b-1c2d3e4f5a62');
    // …while a change in place is written where it lives.
    const renamed = await gw.http
      .patch(`/api/pipelines/${pipelineId}`)
      .set(t.owner.auth)
      .send({ name: 'orders-copy-2' });
    expect(renamed.status).toBe(200);
    expect(
      ((await read(extra, 'Pipeline', pipelineId)) as unknown as { spec: { name: string } }).spec.name,
    ).toBe('orders-copy-2');
    expect(await read(home, 'Pipeline', pipelineId)).toBeUndefined();
  });

  it('writes by id go to the namespace of the object: PATCH, start, DELETE', async () => {
    const id = randomUUID();
    await apply(connector(extra, id, 'to-change'));
    await gw.ctx.mirror.settled();

    const patched = await gw.http
      .patch(`/api/connectors/${id}`)
      .set(t.owner.auth)
      .send({ name: 'changed-via-api' });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ id, name: 'changed-via-api' });
    expect((await read(extra, 'Connector', id))?.spec.name).toBe('changed-via-api');
    expect(await read(home, 'Connector', id)).toBeUndefined();

    expect((await gw.http.post(`/api/connectors/${id}/start`).set(t.owner.auth)).status).toBe(202);
    const started = await read(extra, 'Connector', id);
    expect(started?.spec.desiredState).toBe('running');
    expect(started?.status?.state).toBe('building');

    // The pipeline applied in the extra namespace, deleted through the API with its subscription
    // and the connectors it owns.
    const pipelineId = '0b6f7a7e-8c1d-4f5e-9a3b-1c2d3e4f5a65';
    expect(await read(extra, 'Pipeline', pipelineId)).toBeDefined();
    expect((await gw.http.delete(`/api/pipelines/${pipelineId}`).set(t.owner.auth)).status).toBe(204);
    expect(await read(extra, 'Pipeline', pipelineId)).toBeUndefined();
    expect(await read(extra, 'Subscription', '0b6f7a7e-8c1d-4f5e-9a3b-1c2d3e4f5a64')).toBeUndefined();
    expect(await read(extra, 'Connector', '0b6f7a7e-8c1d-4f5e-9a3b-1c2d3e4f5a61')).toBeUndefined();
    expect((await get(`/api/pipelines/${pipelineId}`)).status).toBe(404);
  });

  it('adds the data models of a connector of the extra namespace there, its managed Secret in the release one', async () => {
    const id = randomUUID();
    const password = { valueFrom: { secretKeyRef: { name: 'shop-db', key: 'password' } } };
    await kc.makeApiClient(CoreV1Api).createNamespacedSecret({
      namespace: home,
      body: {
        metadata: { name: 'shop-db', annotations: { 'sluice.dev/allowed-teams': t.teamId } },
        stringData: { password: 'not-shown' },
      },
    });
    const configuration = { host: 'db.internal', database: 'shop', user: 'cdc', password };
    await apply({
      ...connector(extra, id, 'shop-cdc'),
      spec: {
        name: 'shop-cdc',
        teamId: t.teamId,
        connectorType: 'POSTGRES_SOURCE',
        configuration: { ...configuration, whitelist: ['public.orders'] },
        desiredState: 'stopped',
      },
    } as KubernetesObject);
    await gw.ctx.mirror.settled();
    const res = await gw.http
      .patch(`/api/connectors/${id}`)
      .set(t.owner.auth)
      .send({ json_configuration: { ...configuration, whitelist: ['public.orders', 'public.customers'] } });
    expect(res.status).toBe(200);
    const added = (await gw.ctx.cluster.list('DataModel', extra)).items.filter(
      (d) => (d.spec as { connectorId: string }).connectorId === id,
    );
    expect(added.map((d) => (d.spec as { entry: string }).entry)).toEqual(['public.customers']);
    expect((await gw.ctx.cluster.list('DataModel', home)).items.map((d) => d.metadata.name)).not.toContain(
      added[0]!.metadata.name,
    );
    expect((await get(`/api/datamodels/${added[0]!.metadata.name}`)).body).toMatchObject({
      name: 'shop-cdc_public.customers',
      connector_id: id,
    });
  });

  it('removes an object deleted with kubectl in the extra namespace from the API', async () => {
    const id = randomUUID();
    await apply(connector(extra, id, 'short-lived'));
    await gw.ctx.mirror.settled();
    expect((await get(`/api/connectors/${id}`)).status).toBe(200);
    await objects.delete({
      apiVersion: 'sluice.dev/v1alpha1',
      kind: 'Connector',
      metadata: { name: id, namespace: extra },
    });
    await gw.ctx.mirror.settled();
    expect((await get(`/api/connectors/${id}`)).status).toBe(404);
    expect(await names(`/api/connectors/?team_id=${t.teamId}`)).not.toContain('short-lived');
  });

  it('resumes every namespace from its own cursor after a restart, without relisting', async () => {
    await gw.ctx.mirror.settled();
    const rows = await gw.ctx.db
      .selectFrom('mirror_cursors')
      .select(['kind', 'namespace'])
      .orderBy('kind')
      .orderBy('namespace')
      .execute();
    expect(rows).toEqual(
      [...SLUICE_KINDS]
        .sort()
        .flatMap((kind) => [extra, home].sort().map((namespace) => ({ kind, namespace }))),
    );
    await gw.ctx.mirror.stop();
    // While the gateway is down: a create in each watched namespace.
    const [a, b] = [randomUUID(), randomUUID()];
    await apply(connector(home, a, 'while-down-home'));
    await apply(connector(extra, b, 'while-down-extra'));

    const next = new MirrorSync(gw.ctx.db, gw.ctx.cluster, [home, extra], pino({ level: 'silent' }), {
      clusterFor: (namespace) => new KubernetesCluster({ kubeConfig: kc, namespace }),
    });
    syncs.push(next);
    const relist = jest.spyOn(next, 'relist');
    next.start();
    await next.settled();
    expect(relist).not.toHaveBeenCalled();
    expect((await get(`/api/connectors/${a}`)).body).toMatchObject({ name: 'while-down-home' });
    expect((await get(`/api/connectors/${b}`)).body).toMatchObject({ name: 'while-down-extra' });
  });
});
