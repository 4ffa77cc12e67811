import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { Admin, type Producer } from '@platformatic/kafka';
import type { WorkerConfig } from '@sluice/shared/catalog';
import { describeWithKafka, startPrivateKafka, type PrivateKafka } from '@sluice/testing/kafka';
import {
  assertWorkerBuilt,
  eventually,
  newProducer,
  readTopic,
  startWorker,
  stopWorker,
  topicSize,
  waitReady,
  type RunningWorker,
} from '@sluice/testing/kafka-helpers';

// A KAFKA_TARGET worker whose broker restarts in the middle of the stream (a
// rolling restart, a broker upgrade): the worker must ride through it without
// exiting — an exit would show the connector as `error` — and end with every
// message delivered, duplicates bounded by the batches in flight. The broker
// is a private one (scripts/with-kafka.sh started again), so the restart does
// not disturb the other tests.

const MAPPER = [
  { key: 'id', path: 'id', cast: 'int', primary_key: true },
  { key: 'n', path: 'n', cast: 'int' },
];

describeWithKafka('a worker across a broker restart (real broker, restarted)', () => {
  const run = randomUUID().slice(0, 8);
  let kafka: PrivateKafka;
  let admin: Admin;
  let producer: Producer<string, string, string, string>;
  let worker: RunningWorker | undefined;

  beforeAll(async () => {
    assertWorkerBuilt();
    kafka = await startPrivateKafka();
    admin = new Admin({ clientId: 'sluice-test-admin', bootstrapBrokers: kafka.brokers });
    producer = newProducer(kafka.brokers);
  }, 120_000);
  afterAll(async () => {
    if (worker) await stopWorker(worker, 'SIGKILL');
    await producer?.close().catch(() => undefined);
    await admin?.close().catch(() => undefined);
    await kafka?.close();
  }, 60_000);

  async function produce(topic: string, ids: number[]): Promise<void> {
    for (let i = 0; i < ids.length; i += 500) {
      const values = ids.slice(i, i + 500).map((id) => JSON.stringify({ id: String(id), n: String(id * 2) }));
      await producer.send({ messages: values.map((value) => ({ topic, value })) });
    }
  }

  it('keeps running through two broker restarts and delivers every message, duplicates within the batches in flight', async () => {
    const source = `src-${run}`;
    const out = `out-${run}`;
    const BATCH = 50;
    const PER_ROUND = 2000;
    const ROUNDS = 3;
    const N = PER_ROUND * ROUNDS;
    await admin.createTopics({ topics: [source, out], partitions: 3, replicas: 1 });
    const config: WorkerConfig = {
      connector_id: `dst-${run}`,
      connector_type: 'KAFKA_TARGET',
      role: 'target',
      configuration: { bootstrap_server: kafka.brokers.join(',') },
      subscriptions: [
        {
          id: `sub-${run}`,
          datamodel_id: `dm-${run}`,
          topic: source,
          stream: { kind: 'kafka', bootstrap_servers: kafka.brokers.join(','), include_metadata: false },
          target_table_name: out,
          mapper_config: MAPPER,
          consumer_id: `sluice-test-${run}`,
          enabled: true,
          backfill: true,
          error_table: { enabled: false },
        },
      ],
    };
    await produce(
      source,
      Array.from({ length: PER_ROUND }, (_, i) => i),
    );
    worker = await startWorker(config, { SLUICE_BATCH_SIZE: String(BATCH) });
    await waitReady(worker);

    // Restart while the worker is delivering: as soon as its first batches
    // are on the target, the broker goes down (a clean shutdown) for 2 s.
    const restartedAt: number[] = [];
    for (let round = 1; round < ROUNDS; round++) {
      const before = await topicSize(admin, out);
      await eventually(
        () => topicSize(admin, out),
        (n) => n > before,
        60_000,
        5,
      );
      restartedAt.push((await topicSize(admin, out)) - before);
      await kafka.restart(2);
      // The producer of the test reconnects on its own too; the next round
      // of the stream arrives after the restart.
      await produce(
        source,
        Array.from({ length: PER_ROUND }, (_, i) => round * PER_ROUND + i),
      );
    }

    await eventually(
      async () => new Set((await readTopic(kafka.brokers, admin, out)).map((m) => m.key)).size,
      (n) => n >= N,
      120_000,
      1000,
    );
    // The worker never exited (the operator would have shown `error`) and says it is ready.
    expect(worker.child.exitCode).toBeNull();
    expect(await worker.metrics()).toContain('sluice_worker_ready 1');

    expect(await topicSize(admin, source)).toBe(N); // the source itself holds no duplicates
    const ids = (await readTopic(kafka.brokers, admin, out)).map((m) => JSON.parse(m.value).id as number);
    const distinct = new Set(ids);
    const duplicates = ids.length - distinct.size;
    const restarts = ROUNDS - 1;
    console.log(
      `broker restarts: ${N} messages, ${restarts} restarts (after ${restartedAt.join(', ')} rows of a round), ${duplicates} duplicates (bound ${restarts * 2 * BATCH})`,
    );
    expect(distinct.size).toBe(N);
    expect([...distinct].every((id) => id >= 0 && id < N)).toBe(true);
    // At most the batch being written and the one being committed per restart.
    expect(duplicates).toBeLessThanOrEqual(restarts * 2 * BATCH);
    await stopWorker(worker);
    expect(await worker.exited).toBe(0);
  }, 300_000);
});
