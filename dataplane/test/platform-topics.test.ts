import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import type { WorkerConfig } from '@sluice/shared/catalog';
import { describeWithKafka, testKafkaBrokers } from '@sluice/testing/kafka';
import {
  assertWorkerBuilt,
  createTopic,
  partitionCount,
  startWorker,
  stopWorker,
  waitReady,
  type RunningWorker,
} from '@sluice/testing/kafka-helpers';
import { createScratchDatabase, testPostgresUrl, type ScratchDatabase } from '@sluice/testing/postgres';
import { DEFAULT_TOPIC_PARTITIONS, ensurePlatformTopics } from '../src/systems/kafka/platform-topics.js';

// The data models' topics on the platform stream broker get enough
// partitions for their targets to scale into (SLUICE_TOPIC_PARTITIONS,
// default 6), on the real broker: created before a database source
// publishes, and a topic that exists keeps its partitions.

describeWithKafka('data model topics on the platform stream broker', () => {
  const run = randomUUID().slice(0, 8);
  const brokers = testKafkaBrokers() ?? [];
  const saved = process.env.SLUICE_STREAM_BROKERS;
  let source: ScratchDatabase;
  const workers: RunningWorker[] = [];

  beforeAll(async () => {
    process.env.SLUICE_STREAM_BROKERS = brokers.join(',');
    assertWorkerBuilt();
    if (!testPostgresUrl()) throw new Error('needs SLUICE_TEST_DATABASE_URL (scripts/with-postgres.sh)');
    source = await createScratchDatabase('topics_src');
    await source.client.query('create table public.orders (id int primary key, item text)');
  });
  afterAll(async () => {
    for (const w of workers) await stopWorker(w);
    await source?.drop();
    process.env.SLUICE_STREAM_BROKERS = saved;
  });

  it('creates the missing topics with the partitions asked for (6 by default) and leaves existing ones alone', async () => {
    const existing = `sluice.existing-${run}`;
    await createTopic(brokers, existing, 1);
    const fresh = `sluice.fresh-${run}`;
    expect(await ensurePlatformTopics([existing, fresh, fresh])).toEqual([fresh]);
    expect(await partitionCount(brokers, fresh)).toBe(DEFAULT_TOPIC_PARTITIONS);
    expect(await partitionCount(brokers, existing)).toBe(1);
    expect(await ensurePlatformTopics([fresh])).toEqual([]);
  });

  it('a PostgreSQL source worker creates its data model topic with SLUICE_TOPIC_PARTITIONS partitions', async () => {
    const dm = `dm-${run}`;
    const topic = `sluice.${dm}`;
    const config: WorkerConfig = {
      connector_id: `src_${run}`,
      connector_type: 'POSTGRES_SOURCE',
      role: 'source',
      configuration: { ...source.settings, whitelist: ['public.orders'] },
      datamodels: [{ id: dm, name: 'orders', entry: 'public.orders', enabled: true, topic }],
    };
    const worker = await startWorker(config, {
      SLUICE_STREAM_BROKERS: brokers.join(','),
      SLUICE_TOPIC_PARTITIONS: '4',
    });
    workers.push(worker);
    await waitReady(worker);
    expect(await partitionCount(brokers, topic)).toBe(4);
  });
});
