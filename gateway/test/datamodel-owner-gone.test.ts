import { afterEach, beforeAll, afterAll, describe, expect, it } from '@jest/globals';
import { join, resolve } from 'node:path';
import { Controller, LogEventRecorder, ProcessRuntime, silentLogger } from '@sluice/operator';
import type { ConnectorResource, DataModelResource } from '@sluice/shared/catalog';
import { EmbeddedCluster } from '@sluice/shared/cluster';
import type { ClusterObject, SluiceKind } from '@sluice/shared/ports';
import { closeScanned, configs, setupTeam, type TeamSetup } from './catalog-fixtures.js';
import { databaseKinds, startTestGateway, type TestGateway } from './harness.js';
import { untilBody } from './scripted-gateway.js';

// A connector deleted in the cluster (kubectl, not the API) takes its data
// models even when it never held the operator's finalizer: the operator sets
// a data model's ownerReference and its connector's finalizer in two
// reconciles, in either order, and a connector deleted in between is gone at
// once, with no garbage collector in the embedded cluster to follow the
// ownerReference. The same holds for a connector deleted, its finalizer
// removed by hand, while no operator ran.

const FIXTURE = resolve(import.meta.dirname, '../../testing/fixtures/scripted-worker.mjs');

/** The embedded cluster whose Connector metadata patches (the operator's finalizer) wait while held. */
class FinalizerGate extends EmbeddedCluster {
  private opened: Promise<void> = Promise.resolve();
  open: () => void = () => undefined;

  hold(): void {
    this.opened = new Promise((resolve) => (this.open = resolve));
  }

  override async patch<T extends ClusterObject>(
    kind: SluiceKind,
    namespace: string,
    name: string,
    patch: unknown,
  ): Promise<T> {
    if (kind === 'Connector') await this.opened;
    return super.patch<T>(kind, namespace, name, patch);
  }
}

describe.each(databaseKinds())('a data model whose connector is gone, on %s', (kind) => {
  let gw: TestGateway;
  let t: TeamSetup;
  let cluster: FinalizerGate;
  let stopOperator: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    gw = await startTestGateway(kind);
    t = await setupTeam(gw, 'owner');
    cluster = new FinalizerGate(gw.ctx.db);
  }, 120_000);
  afterEach(async () => {
    cluster.open();
    await stopOperator?.();
    stopOperator = undefined;
  });
  afterAll(() => closeScanned(gw));

  /** The controller of the embedded operator, on `cluster`; the returned function stops it. */
  function startOperator(): () => Promise<void> {
    const runtime = new ProcessRuntime({
      command: [process.execPath, FIXTURE],
      workDir: join(gw.dataDir, 'workers'),
    });
    const controller = new Controller({
      cluster,
      runtime,
      events: new LogEventRecorder(silentLogger),
      log: silentLogger,
      namespaces: [gw.ctx.config.namespace],
      monitoringIntervalMs: 0,
    });
    const ac = new AbortController();
    const running = controller.run(ac.signal);
    return async () => {
      ac.abort();
      await running;
      await runtime.close();
    };
  }

  const ns = () => gw.ctx.config.namespace;
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  async function until<T>(read: () => Promise<T>, test: (v: T) => boolean, what: string): Promise<T> {
    const deadline = Date.now() + 10_000;
    for (let v = await read(); ; v = await read()) {
      if (test(v)) return v;
      if (Date.now() > deadline) throw new Error(`${what} stayed ${JSON.stringify(v)}`);
      await sleep(100);
    }
  }

  /** A Kafka source created through the API, once the operator made it its data model's owner. */
  async function ownedSource(name: string): Promise<{ id: string; dmId: string }> {
    const res = await gw.http
      .post('/api/connectors/')
      .set(t.owner.auth)
      .send({
        name,
        team_id: t.teamId,
        connector_type: 'KAFKA_SOURCE',
        json_configuration: configs.kafkaSource(`${name}-topic`),
      });
    expect(res.status).toBe(201);
    const id = res.body.id as string;
    const [dmId] = res.body.datamodel_ids as string[];
    const dm = await until(
      () => gw.ctx.cluster.get<DataModelResource>('DataModel', ns(), dmId!),
      (d) => (d?.metadata.ownerReferences ?? []).length > 0,
      'the data model',
    );
    expect(dm?.metadata.ownerReferences).toEqual([expect.objectContaining({ kind: 'Connector', name: id })]);
    return { id, dmId: dmId! };
  }

  /** What a user sees: the data model is gone from the API and from the cluster. */
  async function expectGone(dmId: string): Promise<void> {
    await untilBody(
      gw,
      t.owner.auth,
      `/api/datamodels/${dmId}`,
      (b) => b.detail === 'Data model not found',
      10_000,
    );
    expect(await gw.ctx.cluster.get('DataModel', ns(), dmId)).toBeUndefined();
  }

  it('is deleted when its connector was deleted before the operator added its finalizer', async () => {
    cluster.hold();
    stopOperator = startOperator();
    const { id, dmId } = await ownedSource('early');
    const connector = await gw.ctx.cluster.get<ConnectorResource>('Connector', ns(), id);
    expect(connector?.metadata.finalizers).toBeUndefined();

    await gw.ctx.cluster.delete('Connector', ns(), id);
    expect(await gw.ctx.cluster.get('Connector', ns(), id)).toBeUndefined();
    cluster.open();
    await expectGone(dmId);
  });

  it('is deleted when its connector went, its finalizer removed by hand, while no operator ran', async () => {
    stopOperator = startOperator();
    const { id, dmId } = await ownedSource('unattended');
    await until(
      () => gw.ctx.cluster.get<ConnectorResource>('Connector', ns(), id),
      (c) => (c?.metadata.finalizers ?? []).length > 0,
      'the connector',
    );
    await stopOperator();
    stopOperator = undefined;

    await gw.ctx.cluster.delete('Connector', ns(), id);
    await gw.ctx.cluster.patch('Connector', ns(), id, { metadata: { finalizers: null } });
    expect(await gw.ctx.cluster.get('Connector', ns(), id)).toBeUndefined();
    // Still there with no operator: nothing else deletes it.
    await sleep(500);
    expect(await gw.ctx.cluster.get('DataModel', ns(), dmId)).toBeDefined();

    stopOperator = startOperator();
    await expectGone(dmId);
  });
});
