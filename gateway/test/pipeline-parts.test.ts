import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { DataModelResource, SubscriptionResource } from '@sluice/shared/catalog';
import { closeScanned, configs, kafkaPipeline, setupTeam, type TeamSetup } from './catalog-fixtures.js';
import { databaseKinds, type TestGateway } from './harness.js';
import { startScriptedGateway, untilBody, type ScriptedGateway } from './scripted-gateway.js';

// A pipeline and calls on its parts, through the HTTP API, with the embedded
// operator and scripted workers (process runtime): the operator computes what
// the parts do from their spec and the pipeline's and never writes either, so
// a stop of a pipeline's connector sticks, a pipeline in error can be paused,
// and a pause stops each worker once.

describe.each(databaseKinds())('a pipeline and its parts on %s', (kind) => {
  let gw: TestGateway;
  let t: TeamSetup;
  let script: ScriptedGateway['script'];
  beforeAll(async () => {
    ({ gw, script } = await startScriptedGateway(kind));
    t = await setupTeam(gw, 'parts');
  }, 120_000);
  afterAll(() => closeScanned(gw));

  const get = (path: string) => gw.http.get(path).set(t.owner.auth);
  const post = (path: string) => gw.http.post(path).set(t.owner.auth);
  const until = (path: string, test: (body: Record<string, unknown>) => boolean, ms = 20_000) =>
    untilBody(gw, t.owner.auth, path, test, ms);
  const stateOf = (path: string, state: string) => until(path, (b) => (b.state ?? b.status) === state);
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  async function pipeline(name: string, source = 'ready') {
    const res = await post('/api/pipelines/').send(kafkaPipeline(name, t.teamId));
    expect(res.status).toBe(201);
    const b = (await get(`/api/pipelines/${res.body.id as string}`)).body as Record<string, string>;
    script(b.source_connector_id!, source);
    script(b.target_connector_id!, 'ready');
    return { id: b.id!, source: b.source_connector_id!, target: b.target_connector_id! };
  }

  /** The operator's Events (logged in the embedded mode) about one object, from log line `from` on. */
  function transitions(name: string, from: number): string[] {
    return gw
      .recorded()
      .logs.slice(from)
      .flatMap((line) => {
        try {
          const o = JSON.parse(line) as { msg?: string; name?: string; event?: string };
          return o.msg === 'event' && o.name === name && o.event ? [o.event] : [];
        } catch {
          return [];
        }
      });
  }

  it('a connector stopped while its pipeline runs stays paused; the pipeline says why; a start runs it again', async () => {
    const p = await pipeline('sticky');
    expect((await post(`/api/pipelines/${p.id}/start`)).status).toBe(202);
    await stateOf(`/api/pipelines/${p.id}`, 'live');
    expect((await get(`/api/connectors/${p.source}`)).body).toMatchObject({
      status: 'live',
      desired_state: 'running',
      desired_state_reason: 'Run by pipeline sticky',
    });

    const stop = await post(`/api/connectors/${p.source}/stop`);
    expect([stop.status, stop.body]).toEqual([202, 'STOPPING']);
    // At once, in the words the operator uses (shared/src/catalog/effective-state.ts).
    expect((await get(`/api/connectors/${p.source}`)).body).toMatchObject({
      desired_state: 'stopped',
      desired_state_reason: 'Stopped by a stop call after pipeline sticky started',
    });
    await stateOf(`/api/connectors/${p.source}`, 'paused');
    // It stays paused (the operator used to start it again for its pipeline within seconds).
    for (let i = 0; i < 15; i++) {
      await sleep(200);
      expect((await get(`/api/connectors/${p.source}`)).body).toMatchObject({
        status: 'paused',
        desired_state: 'stopped',
      });
    }
    const pipelineRead = await stateOf(`/api/pipelines/${p.id}`, 'error');
    expect(pipelineRead.status_message).toBe(
      'Source sticky-src was stopped after the pipeline started: start it, or start the pipeline again',
    );

    expect((await post(`/api/pipelines/${p.id}/start`)).body).toBe('BUILDING');
    await stateOf(`/api/pipelines/${p.id}`, 'live');
    expect((await get(`/api/connectors/${p.source}`)).body.status).toBe('live');
  });

  it('a subscription switched off while its pipeline runs stays off (PATCH or pause); its start delivers again', async () => {
    const p = await pipeline('switch');
    await post(`/api/pipelines/${p.id}/start`);
    await stateOf(`/api/pipelines/${p.id}`, 'live');
    const subId = (await get(`/api/pipelines/${p.id}`)).body.subscription_id as string;
    expect((await get(`/api/subscriptions/${subId}`)).body.enabled).toBe(true);
    const patched = await gw.http
      .patch(`/api/subscriptions/${subId}`)
      .set(t.owner.auth)
      .send({ enabled: false });
    expect([patched.status, patched.body.enabled]).toEqual([200, false]);
    const sub = await gw.ctx.cluster.get<SubscriptionResource>(
      'Subscription',
      gw.ctx.config.namespace,
      subId,
    );
    expect(sub?.status).toMatchObject({
      effectiveState: 'disabled',
      effectiveReason: 'Disabled by a pause call after pipeline switch started',
    });
    const failed = await stateOf(`/api/pipelines/${p.id}`, 'error');
    expect(failed.status_message).toMatch(
      /^Its subscription \S+ was disabled after the pipeline started: start it, or start the pipeline again$/,
    );
    for (let i = 0; i < 10; i++) {
      await sleep(200);
      expect((await get(`/api/subscriptions/${subId}`)).body.enabled).toBe(false);
    }
    const started = await post(`/api/subscriptions/${subId}/start`);
    expect(started.status).toBeLessThan(300);
    await stateOf(`/api/pipelines/${p.id}`, 'live');
    expect((await get(`/api/subscriptions/${subId}`)).body.enabled).toBe(true);
  });

  it('a pipeline in error can be paused: its workers stop and nothing is retried', async () => {
    const p = await pipeline('failing');
    await post(`/api/pipelines/${p.id}/start`);
    await stateOf(`/api/pipelines/${p.id}`, 'live');
    // In error because its source was stopped on its own (a failing worker gets there after its back-off).
    await post(`/api/connectors/${p.source}/stop`);
    await stateOf(`/api/pipelines/${p.id}`, 'error');
    const pause = await post(`/api/pipelines/${p.id}/pause`);
    expect([pause.status, pause.body]).toEqual([202, 'PAUSED']);
    await stateOf(`/api/connectors/${p.source}`, 'paused');
    await stateOf(`/api/connectors/${p.target}`, 'paused');
    const from = gw.recorded().logs.length;
    await sleep(2000);
    expect((await get(`/api/pipelines/${p.id}`)).body.state).toBe('paused');
    expect(transitions(p.source, from)).toEqual([]);
    expect(transitions(p.target, from)).toEqual([]);
  });

  it('pausing a live pipeline stops each worker once: no relaunch, one transition each', async () => {
    const p = await pipeline('once');
    await post(`/api/pipelines/${p.id}/start`);
    await stateOf(`/api/pipelines/${p.id}`, 'live');
    await stateOf(`/api/connectors/${p.target}`, 'live');
    await sleep(500); // the operator's last Events of the start
    const from = gw.recorded().logs.length;
    expect((await post(`/api/pipelines/${p.id}/pause`)).body).toBe('PAUSED');
    await stateOf(`/api/connectors/${p.source}`, 'paused');
    await stateOf(`/api/connectors/${p.target}`, 'paused');
    await sleep(500);
    expect(transitions(p.target, from)).toEqual([
      'live → stopping: Stopping the worker',
      'stopping → paused',
    ]);
    expect(transitions(p.source, from)).toEqual([
      'live → stopping: Stopping the worker',
      'stopping → paused',
    ]);
    // The API wrote `paused` already; the operator adds at most the one Event of that move.
    expect(transitions(p.id, from).length).toBeLessThanOrEqual(1);
    expect(transitions(p.id, from).every((e) => e.startsWith('live → paused'))).toBe(true);
  });

  it('a connector deleted in the cluster (kubectl, not the API) takes its data models, as the API delete does', async () => {
    const res = await post('/api/connectors/').send({
      name: 'doomed',
      team_id: t.teamId,
      connector_type: 'KAFKA_SOURCE',
      json_configuration: configs.kafkaSource('doomed-topic'),
    });
    expect(res.status).toBe(201);
    const [dmId] = res.body.datamodel_ids as string[];
    const ns = gw.ctx.config.namespace;
    // The operator makes the connector its data model's owner (for the garbage collector of a real cluster).
    const owned = async () =>
      (await gw.ctx.cluster.get<DataModelResource>('DataModel', ns, dmId!))?.metadata.ownerReferences ?? [];
    const deadline = Date.now() + 10_000;
    while ((await owned()).length === 0 && Date.now() < deadline) await sleep(100);
    expect(await owned()).toEqual([expect.objectContaining({ kind: 'Connector', name: res.body.id })]);

    await gw.ctx.cluster.delete('Connector', ns, res.body.id as string);
    await until(`/api/datamodels/${dmId!}`, (b) => b.detail === 'Data model not found');
    expect((await get(`/api/connectors/${res.body.id as string}`)).status).toBe(404);
    expect(await gw.ctx.cluster.get('DataModel', ns, dmId!)).toBeUndefined();
  });
});
