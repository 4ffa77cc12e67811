import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import type { Admin, Producer } from '@platformatic/kafka';
import { describeWithKafka, testKafkaBrokers } from '@sluice/testing/kafka';
import { eventually, readTopic } from '@sluice/testing/kafka-helpers';
import {
  closeScanned,
  configs,
  kafkaPipeline,
  reachState,
  setupTeam,
  type TeamSetup,
} from './catalog-fixtures.js';
import { databaseKinds, type TestGateway } from './harness.js';
import {
  startKafkaPipelineSetup,
  startLiveKafkaPipeline,
  type KafkaPipelineSetup,
} from './kafka-pipeline-setup.js';
import { startScriptedGateway, untilBody, type ScriptedGateway } from './scripted-gateway.js';

// Under `make run` (the embedded operator, workers as child processes) a
// worker that dies is restarted as a kubelet restarts a pod: a kill -9 costs
// a restart, counted in the connector's `worker`, and the connector goes back
// to live by itself; a worker that fails at once every time ends in `error`
// after the threshold, with its own error line (docs/data-plane.md, "Worker
// restarts").

/** The pid of the worker process of `connectorId` (its SLUICE_WORKER_ID is `<namespace>/<id>`). */
function workerPid(connectorId: string): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let environ: string;
    try {
      environ = readFileSync(`/proc/${entry}/environ`, 'utf8');
    } catch {
      continue; // gone meanwhile, or not ours
    }
    if (environ.split('\0').some((v) => v.startsWith('SLUICE_WORKER_ID=') && v.endsWith(`/${connectorId}`))) {
      return Number(entry);
    }
  }
  return undefined;
}

interface WorkerRead {
  restarts: number;
  consecutive_failures: number;
  last_termination: {
    reason: string;
    exit_code: number | null;
    signal: string | null;
    message: string | null;
    finished_at: string;
  } | null;
}

describe.each(databaseKinds())('a worker that dies is restarted (process runtime, %s)', (kind) => {
  let gw: TestGateway;
  let t: TeamSetup;
  let script: ScriptedGateway['script'];
  beforeAll(async () => {
    ({ gw, script } = await startScriptedGateway(kind));
    t = await setupTeam(gw, 'restarts');
  });
  afterAll(() => closeScanned(gw));

  const get = (path: string) => gw.http.get(path).set(t.owner.auth);
  const until = (path: string, test: (body: Record<string, unknown>) => boolean, ms = 20_000) =>
    untilBody(gw, t.owner.auth, path, test, ms);

  it('kill -9 of a live worker: a restart in its status, back to live by itself, never error', async () => {
    const res = await gw.http
      .post('/api/connectors/')
      .set(t.owner.auth)
      .send({
        name: `killed-${kind}`,
        team_id: t.teamId,
        connector_type: 'KAFKA_SOURCE',
        json_configuration: configs.kafkaSource('killed-topic'),
      });
    expect(res.status).toBe(201);
    const id = res.body.id as string;
    script(id, 'ready');
    expect((await get(`/api/connectors/${id}`)).body.worker).toBeNull();
    await gw.http.post(`/api/connectors/${id}/start`).set(t.owner.auth);
    const live = await until(`/api/connectors/${id}`, (b) => b.status === 'live');
    expect(live.worker).toEqual({ restarts: 0, consecutive_failures: 0, last_termination: null });

    const pid = workerPid(id);
    expect(pid).toBeDefined();
    const seen = new Set<string>();
    process.kill(pid!, 'SIGKILL');
    const back = await until(`/api/connectors/${id}`, (b) => {
      seen.add(b.status as string);
      return b.status === 'live' && (b.worker as WorkerRead | null)?.restarts === 1;
    });
    expect(back.worker).toEqual({
      restarts: 1,
      consecutive_failures: 0,
      last_termination: {
        reason: 'Error',
        exit_code: 137,
        signal: 'SIGKILL',
        // kill -9 leaves no line of the worker's own: none, not its last log line.
        message: null,
        finished_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      },
    });
    expect(back.status_message).toBeNull();
    expect(seen).not.toContain('error');
    expect(workerPid(id)).not.toBe(pid);
  });

  it('a worker that fails at once every time: restarted with back-off, then error with its own line', async () => {
    const res = await gw.http
      .post('/api/pipelines/')
      .set(t.owner.auth)
      .send(kafkaPipeline(`crashloop-${kind}`, t.teamId));
    expect(res.status).toBe(201);
    const p = (await get(`/api/pipelines/${res.body.id as string}`)).body as Record<string, string>;
    const source = p.source_connector_id!;
    script(source, 'fail:SASL authentication failed for user orders');
    script(p.target_connector_id!, 'ready');
    await gw.http.post(`/api/pipelines/${p.id}/start`).set(t.owner.auth);

    const failed = await until(`/api/connectors/${source}`, (b) => b.status === 'error');
    const worker = failed.worker as WorkerRead;
    // The threshold: three restarts without becoming ready.
    expect(worker.consecutive_failures).toBeGreaterThanOrEqual(3);
    expect(worker.restarts).toBeGreaterThanOrEqual(3);
    expect(worker.last_termination).toMatchObject({
      reason: 'Error',
      exit_code: 1,
      signal: null,
      // Its termination message, not its last log line ("failing: …").
      message: 'SASL authentication failed for user orders',
    });
    expect(failed.status_message).toMatch(
      /^The worker exited with code 1: SASL authentication failed for user orders \(restarted \d+ times without becoming ready; still retrying\)$/,
    );
    const pipeline = await until(`/api/pipelines/${p.id}`, (b) => b.state === 'error');
    expect(pipeline.status_message).toContain('SASL authentication failed for user orders');

    // Still retried with back-off: fixed at the source, it comes back by itself.
    script(source, 'ready');
    await until(`/api/pipelines/${p.id}`, (b) => b.state === 'live', 30_000);
    const recovered = (await get(`/api/connectors/${source}`)).body as Record<string, unknown>;
    expect(recovered).toMatchObject({ status: 'live', worker: { consecutive_failures: 0 } });
  });
});

describeWithKafka("kill -9 of a live pipeline's target worker (real workers, real broker)", () => {
  const brokers = testKafkaBrokers() ?? [];

  describe.each(databaseKinds())('%s', (kind) => {
    const run = randomUUID().slice(0, 8);
    const source = `restart-in-${run}`;
    const out = `restart-out-${run}`;
    let gw: TestGateway;
    let t: TeamSetup;
    let admin: Admin;
    let producer: Producer<string, string, string, string>;
    let setup: KafkaPipelineSetup | undefined;

    beforeAll(async () => {
      setup = await startKafkaPipelineSetup(kind, `restart-${kind}`, brokers, source);
      ({ gw, t, admin, producer } = setup);
    });
    afterAll(async () => {
      await setup?.close();
    });

    const produce = (ids: number[]) =>
      producer.send({
        messages: ids.map((id) => ({ topic: source, value: JSON.stringify({ order: { id } }) })),
      });
    const outIds = async () =>
      (await readTopic(brokers, admin, out)).map(
        (m) => (JSON.parse(m.value) as { order_id: number }).order_id,
      );

    it('the target restarts by itself, shows the restart, and every message arrives', async () => {
      const { id, targetId: target } = await startLiveKafkaPipeline(setup!, `restart-${run}`, out, [
        { key: 'order_id', path: 'order|id', cast: 'int', primary_key: true },
      ]);

      const all = Array.from({ length: 600 }, (_, i) => i + 1);
      await produce(all.slice(0, 200));
      await eventually(outIds, (ids) => new Set(ids).size >= 200);
      // Killed while messages keep coming.
      const sending = (async () => {
        for (let i = 200; i < 600; i += 50) {
          await produce(all.slice(i, i + 50));
          await new Promise((r) => setTimeout(r, 50));
        }
      })();
      const pid = workerPid(target);
      expect(pid).toBeDefined();
      const killedAt = Date.now();
      process.kill(pid!, 'SIGKILL');
      await sending;

      const back = await untilBody(
        gw,
        t.owner.auth,
        `/api/connectors/${target}`,
        (b) => b.status === 'live' && (b.worker as WorkerRead | null)?.restarts === 1,
        90_000,
      );
      const backAfterMs = Date.now() - killedAt;
      expect((back.worker as WorkerRead).last_termination).toMatchObject({
        signal: 'SIGKILL',
        exit_code: 137,
      });
      await reachState(gw, t.owner, `/api/pipelines/${id}`, 'live');
      const arrived = await eventually(outIds, (ids) => new Set(ids).size >= all.length, 90_000);
      expect([...new Set(arrived)].sort((a, b) => a - b)).toEqual(all);
      // At least once: a message the killed worker wrote but had not committed may come twice.
      console.log(
        `kill -9 of a target worker (${kind}): live again after ${backAfterMs} ms, ` +
          `${arrived.length - all.length} duplicates of ${all.length}`,
      );
    }, 240_000);
  });
});
