import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { Admin, Producer } from '@platformatic/kafka';
import type { WorkerConfig } from '@sluice/shared/catalog';
import { describeWithKafka, testKafkaBrokers } from '@sluice/testing/kafka';
import { changeEvent } from '../src/contracts.js';
import { countingListener, hostPort, type CountingListener } from '@sluice/testing/counting-listener';
import {
  assertWorkerBuilt,
  startWorker,
  stopWorker,
  waitReady,
  type RunningWorker,
} from '@sluice/testing/kafka-helpers';

// Every broker connection of a worker goes through the workers' outbound
// address policy, on the built worker program against the real broker: the
// bootstrap list (a KAFKA_SOURCE at 0.0.0.0 or 169.254.169.254, a
// KAFKA_TARGET's cluster, a subscription's stream) and every broker the
// cluster's metadata names. A refusal ends the worker at once with a message
// naming the broker, and opens no connection: a counting TCP proxy in front
// of the real broker stands where the worker is sent.

describeWithKafka('the outbound policy on the brokers of Kafka workers (worker program, real broker)', () => {
  const brokers = testKafkaBrokers() ?? [];
  const broker = hostPort(brokers[0] ?? '');
  const run = randomUUID().slice(0, 8);
  const topic = `outbound-${run}`;
  let admin: Admin;
  let proxy: CountingListener;
  const workers: RunningWorker[] = [];

  beforeAll(async () => {
    assertWorkerBuilt();
    admin = new Admin({ clientId: 'sluice-test-admin', bootstrapBrokers: brokers });
    await admin.createTopics({ topics: [topic], partitions: 1, replicas: 1 });
    // The real broker behind a counting proxy on loopback.
    proxy = await countingListener('127.0.0.1', broker);
  }, 60_000);
  afterAll(async () => {
    for (const w of workers) await stopWorker(w, 'SIGKILL');
    await proxy?.close();
    await admin?.close();
  });

  const source = (bootstrap: string): WorkerConfig => ({
    connector_id: `src-${run}`,
    connector_type: 'KAFKA_SOURCE',
    role: 'source',
    configuration: { bootstrap_servers: bootstrap },
    datamodels: [{ id: `dm-${run}`, name: 'orders', entry: topic, enabled: true, topic }],
  });

  /** A KAFKA_TARGET reading `topic` from `streamBootstrap` (the platform stream when null). */
  const target = (targetBootstrap: string, streamBootstrap: string | null): WorkerConfig => ({
    connector_id: `dst-${run}`,
    connector_type: 'KAFKA_TARGET',
    role: 'target',
    configuration: { bootstrap_server: targetBootstrap },
    subscriptions: [
      {
        id: `sub-${run}`,
        datamodel_id: `dm-${run}`,
        topic,
        stream:
          streamBootstrap === null
            ? { kind: 'platform' }
            : { kind: 'kafka', bootstrap_servers: streamBootstrap, include_metadata: false },
        target_table_name: `out-${run}`,
        mapper_config: [{ key: 'id', path: 'id' }],
        consumer_id: `sluice-test-outbound-${run}`,
        enabled: true,
        backfill: streamBootstrap === null,
        error_table: { enabled: false },
      },
    ],
  });

  /** Starts the worker, waits for its exit; returns how long it ran and why it ended. */
  async function failedRun(config: WorkerConfig, env: Record<string, string> = {}) {
    const started = Date.now();
    const w = await startWorker(config, env);
    workers.push(w);
    const code = await Promise.race([
      w.exited,
      new Promise<'still running'>((r) => setTimeout(() => r('still running'), 20_000)),
    ]);
    return {
      code,
      ms: Date.now() - started,
      message: w.terminationMessage() ?? w.output(),
      output: w.output(),
    };
  }

  it('reaches the broker through the proxy when the address is allowed (the counting listener counts)', async () => {
    const before = proxy.accepted();
    const w = await startWorker(source(`127.0.0.1:${proxy.port}`));
    workers.push(w);
    await waitReady(w);
    expect(proxy.accepted()).toBeGreaterThan(before);
    await stopWorker(w);
  });

  it('refuses a KAFKA_SOURCE at 0.0.0.0:<port> without connecting: error at once, naming the broker', async () => {
    const before = proxy.accepted();
    const r = await failedRun(source(`0.0.0.0:${proxy.port}`));
    expect(proxy.accepted() - before).toBe(0);
    expect(r.code).toBe(1);
    expect(r.message).toContain(`broker 0.0.0.0:${proxy.port} is refused by the outbound policy`);
    expect(r.ms).toBeLessThan(10_000);
  });

  it('refuses a KAFKA_SOURCE at 169.254.169.254:80 at once (no connect timeout, no retries)', async () => {
    const r = await failedRun(source('169.254.169.254:80'));
    expect(r.code).toBe(1);
    expect(r.message).toMatch(
      /^cannot read the source topics: The broker 169\.254\.169\.254:80 is refused by the outbound policy: Connections to 169\.254\.169\.254 are not allowed/,
    );
    expect(r.ms).toBeLessThan(10_000);
  });

  it('refuses a broker name that resolves to a denied address, without connecting', async () => {
    const before = proxy.accepted();
    const env = { SLUICE_WORKER_DENY_CIDRS: '127.0.0.0/8,::1/128,169.254.0.0/16' };
    const r = await failedRun(source(`localhost:${proxy.port}`), env);
    expect(proxy.accepted() - before).toBe(0);
    expect(r.code).toBe(1);
    expect(r.message).toMatch(
      new RegExp(`broker localhost:${proxy.port} is refused by the outbound policy: localhost resolves to `),
    );
    expect(r.ms).toBeLessThan(10_000);
  });

  it('refuses an IPv6 form of a denied IPv4 address', async () => {
    const r = await failedRun(source(`[::ffff:0.0.0.0]:${proxy.port}`));
    expect(r.code).toBe(1);
    expect(r.message).toContain('is refused by the outbound policy');
  });

  it("refuses a KAFKA_TARGET's cluster and a subscription's stream at a denied address", async () => {
    const before = proxy.accepted();
    const sink = await failedRun(target(`0.0.0.0:${proxy.port}`, `127.0.0.1:${proxy.port}`));
    // The target's cluster is opened first: the stream's was not dialled either.
    expect(proxy.accepted() - before).toBe(0);
    expect(sink.code).toBe(1);
    expect(sink.message).toContain(`broker 0.0.0.0:${proxy.port} is refused by the outbound policy`);
    expect(sink.ms).toBeLessThan(10_000);
    const stream = await failedRun(target(`127.0.0.1:${proxy.port}`, '169.254.169.254:80'));
    expect(stream.code).toBe(1);
    expect(stream.message).toContain('broker 169.254.169.254:80 is refused by the outbound policy');
    expect(stream.ms).toBeLessThan(10_000);
  });

  it('refuses a broker the cluster metadata names at a denied address, though the bootstrap address is allowed', async () => {
    // Bootstrap through 127.0.0.2 (allowed); the broker advertises itself at
    // its own address, which this worker's deny list covers.
    const front = await countingListener('127.0.0.2', broker);
    try {
      const env = { SLUICE_WORKER_DENY_CIDRS: `${broker.host}/32,169.254.0.0/16` };
      for (const config of [
        source(`127.0.0.2:${front.port}`),
        target(`127.0.0.2:${front.port}`, `127.0.0.2:${front.port}`),
      ]) {
        const r = await failedRun(config, env);
        expect(r.code).toBe(1);
        expect(r.message).toContain(`broker ${broker.host}:${broker.port} is refused by the outbound policy`);
        expect(r.ms).toBeLessThan(15_000);
      }
      // The bootstrap connections went through; the advertised broker was refused.
      expect(front.accepted()).toBeGreaterThan(0);
    } finally {
      await front.close();
    }
  });

  it("refuses a KAFKA_TARGET's partition leader at its first write, without retrying the batch", async () => {
    // The stream is the platform's (the operator's own broker setting, not
    // under the policy); the target cluster is reached through 127.0.0.2 and
    // names its leader at the broker's own address, which is denied here.
    const producer = new Producer({ clientId: 'sluice-test-producer', bootstrapBrokers: brokers });
    const event = changeEvent({
      op: 'c',
      before: null,
      after: { id: 1 },
      keyColumns: ['id'],
      connector_id: `src-${run}`,
      datamodel_id: `dm-${run}`,
      entry: 'public.orders',
      position: '0/1',
      snapshot: false,
      tsMs: Date.now(),
    });
    await producer.send({ messages: [{ topic, value: Buffer.from(JSON.stringify(event)) }] });
    await producer.close();
    const front = await countingListener('127.0.0.2', broker);
    try {
      const r = await failedRun(target(`127.0.0.2:${front.port}`, null), {
        SLUICE_STREAM_BROKERS: brokers.join(','),
        SLUICE_WORKER_DENY_CIDRS: `${broker.host}/32,169.254.0.0/16`,
      });
      expect(r.code).toBe(1);
      expect(r.message).toContain(`broker ${broker.host}:${broker.port} is refused by the outbound policy`);
      expect(r.output).not.toContain('retrying');
    } finally {
      await front.close();
    }
  });
});
