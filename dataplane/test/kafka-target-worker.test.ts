import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { Admin, type Producer } from '@platformatic/kafka';
import { type WorkerConfig } from '@sluice/shared/catalog';
import { secretEnvName } from '@sluice/shared/secrets';
import { describeWithKafka, testKafkaBrokers, testKafkaSecurity } from '@sluice/testing/kafka';
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

// The KAFKA_TARGET worker as users run it: the built worker program, a config
// file, the real broker. Numbered JSON messages on a source topic come out
// mapped on the target topic, failures in the error topic; killed with
// SIGKILL mid-stream and restarted, it ends with every message delivered and
// at most one batch of duplicates per kill (at-least-once).

const MAPPER = [
  { key: 'id', path: 'id', cast: 'int', primary_key: true },
  { key: 'customer', path: 'customer|name' },
  { key: 'amount', path: 'amount', cast: 'float', nullable: false },
];

describeWithKafka('KAFKA_TARGET worker (worker program, real broker)', () => {
  const brokers = testKafkaBrokers() ?? [];
  const security = testKafkaSecurity();
  const run = randomUUID().slice(0, 8);
  let admin: Admin;
  let producer: Producer<string, string, string, string>;
  const workers: RunningWorker[] = [];

  beforeAll(() => {
    assertWorkerBuilt();
    admin = new Admin({ clientId: 'sluice-test-admin', bootstrapBrokers: brokers });
    producer = newProducer(brokers);
  });
  afterAll(async () => {
    for (const w of workers) await stopWorker(w, 'SIGKILL');
    await producer?.close();
    await admin?.close();
  });

  /** A target worker configuration reading `source` into `out`, failures to `errors`. */
  function config(
    source: string,
    out: string,
    errors: string,
    targetSettings: Record<string, unknown>,
  ): WorkerConfig {
    return {
      connector_id: `dst-${run}`,
      connector_type: 'KAFKA_TARGET',
      role: 'target',
      configuration: targetSettings,
      subscriptions: [
        {
          id: `sub-${source}`,
          datamodel_id: `dm-${source}`,
          topic: source,
          stream: { kind: 'kafka', bootstrap_servers: brokers.join(','), include_metadata: false },
          target_table_name: out,
          mapper_config: MAPPER,
          consumer_id: `sluice-test-${source}`,
          enabled: true,
          backfill: true,
          error_table: { enabled: true, name: errors },
        },
      ],
    };
  }

  const order = (id: number) =>
    JSON.stringify({ id: String(id), customer: { name: `c${id % 5}` }, amount: `${id}.5` });

  async function produce(topic: string, values: string[]): Promise<void> {
    for (let i = 0; i < values.length; i += 500) {
      await producer.send({ messages: values.slice(i, i + 500).map((value) => ({ topic, value })) });
    }
  }

  it('maps numbered messages to the target topic, keyed by the primary key; not-JSON and failing rows go to the error topic', async () => {
    const source = `src-a-${run}`;
    const out = `out-a-${run}`;
    const errors = `err-a-${run}`;
    const N = 200;
    await admin.createTopics({ topics: [source], partitions: 3, replicas: 1 });
    await produce(source, [
      ...Array.from({ length: N }, (_, i) => order(i)),
      'this is { not JSON',
      JSON.stringify({ id: '9999', customer: { name: 'x' }, amount: 'lots' }),
    ]);

    // The target cluster is reached through SASL with the password as a
    // secret reference, given to the worker the way a pod gets it.
    const ref = { name: 'kafka-target', key: 'password' };
    const settings: Record<string, unknown> = security
      ? {
          bootstrap_server: security.saslPlaintextBrokers.join(','),
          security_protocol: 'SASL_PLAINTEXT',
          sasl_mechanism: 'SCRAM-SHA-256',
          sasl_username: security.username,
          sasl_password: { valueFrom: { secretKeyRef: ref } },
        }
      : { bootstrap_server: brokers.join(',') };
    const env: Record<string, string> = security ? { [secretEnvName(ref)]: security.password } : {};
    const w = await startWorker(config(source, out, errors, settings), env);
    workers.push(w);
    await waitReady(w);

    await eventually(
      () => topicSize(admin, out).catch(() => 0),
      (n) => n >= N,
    );
    await eventually(
      () => topicSize(admin, errors).catch(() => 0),
      (n) => n >= 2,
    );
    const rows = await readTopic(brokers, admin, out);
    expect(rows).toHaveLength(N);
    const byId = new Map(rows.map((m) => [JSON.parse(m.value).id as number, m]));
    expect([...byId.keys()].sort((a, b) => a - b)).toEqual(Array.from({ length: N }, (_, i) => i));
    const m7 = byId.get(7)!;
    expect(JSON.parse(m7.value)).toEqual({ id: 7, customer: 'c2', amount: 7.5 });
    expect(m7.key).toBe('{"id":7}');

    const failed = (await readTopic(brokers, admin, errors)).map((m) => JSON.parse(m.value));
    expect(failed).toHaveLength(2);
    const notJson = failed.find((f) => f.message === 'this is { not JSON');
    expect(notJson).toMatchObject({ subscription_id: `sub-${source}`, source_topic: source, row: null });
    expect(notJson.reason).toMatch(/^not JSON/);
    const badRow = failed.find((f) => f.message !== 'this is { not JSON');
    expect(JSON.parse(badRow.message)).toMatchObject({ id: '9999', amount: 'lots' });
    expect(badRow.row).toMatchObject({ id: 9999, error: expect.any(String) });

    const metrics = await w.metrics();
    expect(metrics).toContain('sluice_worker_ready 1');
    expect(metrics).toMatch(new RegExp(`sluice_worker_rows_written_total\\{table="${out}"\\} ${N}\\b`));
    expect(metrics).toContain(`sluice_worker_errors_total{subscription="sub-${source}",kind="not_json"} 1`);
    expect(metrics).toContain(`sluice_worker_errors_total{subscription="sub-${source}",kind="mapper"} 1`);
    expect(metrics).toMatch(
      new RegExp(`sluice_worker_end_to_end_latency_seconds_count\\{subscription="sub-${source}"\\} \\d+`),
    );
    await stopWorker(w);
    // A clean stop, and the password never reached its output.
    expect(await w.exited).toBe(0);
    if (security) expect(w.output()).not.toContain(security.password);
    expect(w.output()).not.toContain('lots'); // message contents are not logged either
  }, 120_000);

  it('delivers every message at least once when SIGKILLed mid-stream, with at most one batch of duplicates per kill', async () => {
    const source = `src-b-${run}`;
    const out = `out-b-${run}`;
    const errors = `err-b-${run}`;
    const CHUNKS = 4;
    const PER_CHUNK = 1500;
    const N = CHUNKS * PER_CHUNK;
    const BATCH = 100;
    await admin.createTopics({ topics: [source], partitions: 3, replicas: 1 });
    const cfg = config(source, out, errors, { bootstrap_server: brokers.join(',') });
    const env = { SLUICE_BATCH_SIZE: String(BATCH) };

    // Each round: a chunk of the stream is produced, a worker starts on it
    // and is killed as soon as its first new batches reach the target, i.e.
    // in the middle of that chunk. The last worker is left to finish.
    let kills = 0;
    const killedAt: string[] = [];
    for (let chunk = 0; chunk < CHUNKS; chunk++) {
      const ids = Array.from({ length: PER_CHUNK }, (_, i) => chunk * PER_CHUNK + i);
      await produce(source, ids.map(order));
      const before = await topicSize(admin, out).catch(() => 0);
      const w = await startWorker(cfg, env);
      workers.push(w);
      await waitReady(w);
      if (chunk < CHUNKS - 1) {
        await eventually(
          () => topicSize(admin, out).catch(() => 0),
          (n) => n > before,
          60_000,
          5,
        );
        await stopWorker(w, 'SIGKILL');
        kills += 1;
        killedAt.push(`${(await topicSize(admin, out)) - before}/${PER_CHUNK}`);
      } else {
        await eventually(
          () => topicSize(admin, out),
          (n) => n >= N,
          90_000,
        );
        await eventually(
          async () => new Set((await readTopic(brokers, admin, out)).map((m) => m.key)).size,
          (n) => n >= N,
          60_000,
          1000,
        );
        await stopWorker(w);
      }
    }

    // The source holds each message once: duplicates below are the worker's.
    expect(await topicSize(admin, source)).toBe(N);
    const delivered = await readTopic(brokers, admin, out);
    const ids = delivered.map((m) => JSON.parse(m.value).id as number);
    const distinct = new Set(ids);
    const duplicates = ids.length - distinct.size;
    console.log(
      `at-least-once: ${N} messages, ${kills} SIGKILLs, ${duplicates} duplicates (bound ${kills * BATCH}); rows of each chunk written before its kill: ${killedAt.join(', ')}`,
    );
    expect(distinct.size).toBe(N);
    expect([...distinct].every((id) => id >= 0 && id < N)).toBe(true);
    expect(duplicates).toBeLessThanOrEqual(kills * BATCH);
    expect(await topicSize(admin, errors).catch(() => 0)).toBe(0);
  }, 240_000);

  it('writes batches larger than the broker accepts in one request; rows without a primary key have no key', async () => {
    const source = `src-d-${run}`;
    const out = `out-d-${run}`;
    const N = 300;
    await admin.createTopics({ topics: [source], partitions: 1, replicas: 1 });
    // ~6 KiB per message: one batch of 300 is ~1.8 MB, past the broker's 1 MiB
    // batch limit. Without a primary_key rule the rows carry no key.
    const pad = 'x'.repeat(6000);
    for (let i = 0; i < N; i += 50) {
      const values = Array.from({ length: 50 }, (_, j) => JSON.stringify({ id: i + j, pad }));
      await producer.send({ messages: values.map((value) => ({ topic: source, value })) });
    }
    const cfg = config(source, out, `err-d-${run}`, { bootstrap_server: brokers.join(',') });
    cfg.subscriptions![0]!.mapper_config = [];
    const w = await startWorker(cfg, { SLUICE_BATCH_LINGER_MS: '500' });
    workers.push(w);
    await waitReady(w);
    await eventually(
      () => topicSize(admin, out).catch(() => 0),
      (n) => n >= N,
      60_000,
    );
    expect(w.child.exitCode).toBeNull();
    const rows = await readTopic(brokers, admin, out);
    expect(new Set(rows.map((m) => JSON.parse(m.value).id as number)).size).toBe(N);
    expect(rows.every((m) => m.key === undefined)).toBe(true);
    await stopWorker(w);
  }, 120_000);

  it('ends in error with a clear message when the source topic does not exist', async () => {
    const w = await startWorker(
      config(`missing-${run}`, `out-c-${run}`, `err-c-${run}`, { bootstrap_server: brokers.join(',') }),
    );
    workers.push(w);
    expect(await w.exited).not.toBe(0);
    expect(w.terminationMessage()).toContain(`topic missing-${run} does not exist on ${brokers.join(',')}`);
    expect(w.terminationMessage()).not.toMatch(/\n\s+at /); // no stack trace
  }, 60_000);

  it('a refused SASL login ends in error with the sentence a pre-flight check gives', async () => {
    if (!security) return;
    const source = `src-d-${run}-${Date.now()}`;
    await admin.createTopics({ topics: [source], partitions: 1, replicas: 1 });
    const where = security.saslPlaintextBrokers.join(',');
    const w = await startWorker(
      config(source, `out-d-${run}`, `err-d-${run}`, {
        bootstrap_server: where,
        security_protocol: 'SASL_PLAINTEXT',
        sasl_mechanism: 'SCRAM-SHA-256',
        sasl_username: security.username,
        sasl_password: 'not-the-password',
      }),
    );
    workers.push(w);
    expect(await w.exited).not.toBe(0);
    // gateway/test/preflight.test.ts expects this sentence from check-credentials.
    expect(w.terminationMessage()).toContain(
      `The broker at ${where} refused the SASL login: check the user name, password and mechanism`,
    );
    expect(w.terminationMessage()).not.toContain('not-the-password');
  }, 60_000);

  it('an unsupported connector type ends in error with "not supported by this version"', async () => {
    const w = await startWorker({ ...config('x', 'y', 'z', {}), connector_type: 'SNOWFLAKE_TARGET' });
    workers.push(w);
    expect(await w.exited).toBe(3);
    expect(w.terminationMessage()).toBe(
      'SNOWFLAKE_TARGET target workers are not supported by this version of Sluice',
    );
  });
});
