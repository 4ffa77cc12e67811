import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WORKER_METRICS } from '@sluice/shared/metrics';
import type { WorkerObservation, WorkerSpec } from '@sluice/shared/ports';
import { describeWithKafka, testKafkaBrokers } from '@sluice/testing/kafka';
import {
  assertWorkerBuilt,
  createTopic,
  eventually,
  groupAssignments,
  newProducer,
  WORKER_PROGRAM,
} from '@sluice/testing/kafka-helpers';
import { createScratchDatabase, testPostgresUrl, type ScratchDatabase } from '@sluice/testing/postgres';
import { ProcessRuntime } from './process-runtime.js';

// A POSTGRES_TARGET scaled 1 → 3 → 1 on the process runtime (`make run`)
// while numbered change events flow from a 6-partition data model topic on
// the real broker into the real PostgreSQL: three child processes share the
// partitions in one consumer group, the first one is never restarted by a
// scale, and every event is in the table, unaltered, at the end.

const PARTITIONS = 6;

describeWithKafka('process runtime: a target scaled 1 → 3 → 1 while messages flow', () => {
  const run = randomUUID().slice(0, 8);
  const brokers = testKafkaBrokers() ?? [];
  const dm = `dm-${run}`;
  const topic = `sluice.${dm}`;
  const group = `scale-${run}`;
  const workDir = mkdtempSync(join(tmpdir(), 'sluice-scale-'));
  let target: ScratchDatabase;
  let runtime: ProcessRuntime;
  const producer = newProducer(brokers);

  beforeAll(async () => {
    assertWorkerBuilt();
    if (!testPostgresUrl()) throw new Error('needs SLUICE_TEST_DATABASE_URL (scripts/with-postgres.sh)');
    target = await createScratchDatabase('scale_tgt');
    await createTopic(brokers, topic, PARTITIONS);
    runtime = new ProcessRuntime({
      command: [process.execPath, WORKER_PROGRAM],
      workDir,
      env: { SLUICE_STREAM_BROKERS: brokers.join(','), SLUICE_BATCH_LINGER_MS: '20' },
      readinessIntervalMs: 100,
    });
  });
  afterAll(async () => {
    await runtime?.close();
    await producer.close().catch(() => undefined);
    await target?.drop();
    rmSync(workDir, { recursive: true, force: true });
  });

  const spec = (replicas: number): WorkerSpec => ({
    id: `ns/tgt-${run}`,
    namespace: 'ns',
    configHash: 'h1',
    replicas,
    scalesOut: true,
    config: {
      connector_id: `tgt-${run}`,
      connector_type: 'POSTGRES_TARGET',
      role: 'target',
      configuration: { ...target.settings, schema: 'public' },
      subscriptions: [
        {
          id: `sub-${run}`,
          datamodel_id: dm,
          topic,
          stream: { kind: 'platform' },
          target_table_name: 'numbered',
          mapper_config: [
            { key: 'id', path: 'id', cast: 'int', primary_key: true },
            { key: 'n', path: 'n', cast: 'int' },
          ],
          consumer_id: group,
          enabled: true,
          backfill: true,
          error_table: { enabled: false },
        },
      ],
    },
  });
  const observe = () => runtime.observe(`ns/tgt-${run}`);
  const until = (test: (o: WorkerObservation | undefined) => boolean) => eventually(observe, test, 60_000);

  /** Change events 1, 2, 3, … keyed by id, as a source publishes them, until `stop()`. */
  let sent = 0;
  let producing: Promise<void> | undefined;
  let stopProducing = false;
  const produce = async () => {
    while (!stopProducing) {
      const batch = Array.from({ length: 50 }, (_, i) => sent + i + 1);
      const now = Date.now();
      await producer.send({
        messages: batch.map((id) => ({
          topic,
          key: JSON.stringify({ id }),
          value: JSON.stringify({
            op: 'c',
            before: null,
            after: { id, n: id * 7 },
            key: { id },
            source: {
              connector_id: `src-${run}`,
              datamodel_id: dm,
              entry: 'public.numbered',
              position: String(id),
              snapshot: false,
              ts_ms: now,
            },
            emitted_ms: now,
          }),
        })),
      });
      sent += batch.length;
      await new Promise((r) => setTimeout(r, 25));
    }
  };
  const startTime = async () => {
    const url = await runtime.metricsUrl(`ns/tgt-${run}`);
    const text = await (await fetch(url as string)).text();
    return new RegExp(`^${WORKER_METRICS.startTime}(?:\\{\\})? (\\S+)$`, 'm').exec(text)?.[1];
  };
  const members = () => groupAssignments(brokers, group, topic);

  it('shares the partitions among 3 processes, restarts none, and loses no message scaling back to 1', async () => {
    await runtime.ensure(spec(1));
    await until((o) => o?.phase === 'ready');
    producing = produce();
    await eventually(members, (m) => m.length === 1 && m[0]!.length === PARTITIONS);
    const first = await startTime();
    expect(first).toBeDefined();

    // Scaled to 3: two more processes join the group; the first keeps running.
    await runtime.ensure(spec(3));
    expect(await until((o) => o?.readyReplicas === 3)).toMatchObject({
      phase: 'ready',
      replicas: 3,
      restarts: 0,
    });
    const shared = await eventually(members, (m) => m.length === 3 && m.every((p) => p.length > 0));
    expect(shared.flat().sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(await startTime()).toBe(first);
    // Its log is the three processes' logs, each line saying which one wrote it.
    const writers = async () => {
      const found = new Set<string>();
      for await (const line of runtime.logs(`ns/tgt-${run}`, { tail: 1000 }))
        found.add(String((JSON.parse(line) as { instance?: string }).instance));
      return [...found].sort();
    };
    expect(await eventually(writers, (w) => w.length === 3)).toEqual(['0', '1', '2']);
    const atThree = sent;
    await eventually(
      async () => sent,
      (n) => n > atThree + 500,
    );

    // Back to 1: the two others leave; the first takes every partition again.
    await runtime.ensure(spec(1));
    expect(await until((o) => o?.replicas === 1 && o.readyReplicas === 1)).toMatchObject({ restarts: 0 });
    await eventually(members, (m) => m.length === 1 && m[0]!.length === PARTITIONS);
    expect(await startTime()).toBe(first);
    stopProducing = true;
    await producing;

    // Every numbered event is in the table once, unaltered.
    const rows = async () =>
      (
        await target.client
          .query(
            'select count(*)::int as rows, count(distinct id)::int as ids, min(id)::int as lo, max(id)::int as hi, count(*) filter (where n <> id * 7)::int as altered from public.numbered',
          )
          .catch(() => ({ rows: [{ rows: 0 }] }))
      ).rows[0] as { rows: number };
    expect(await eventually(rows, (r) => r.rows === sent, 120_000)).toEqual({
      rows: sent,
      ids: sent,
      lo: 1,
      hi: sent,
      altered: 0,
    });
  });
});
