import { afterAll, beforeAll } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import type { WorkerConfig } from '@sluice/shared/catalog';
import { testKafkaBrokers } from '@sluice/testing/kafka';
import { createScratchDatabase, testPostgresUrl, type ScratchDatabase } from '@sluice/testing/postgres';
import { assertWorkerBuilt } from '@sluice/testing/kafka-helpers';
import { platformTargetConfig } from './platform-target-config.js';
import { workerSet, type WorkerSet } from './worker-set.js';

/**
 * What a PostgreSQL → PostgreSQL worker program test runs against: a source
 * and a target scratch database (named from `prefix`), `public.orders`
 * created in the source by `setup`, and the workers it started (stopped,
 * then the databases dropped, after the block). Registers its
 * `beforeAll`/`afterAll` in the calling describe block; `source` and
 * `target` are there once its tests run. Needs the built worker program and
 * SLUICE_TEST_DATABASE_URL.
 */
export interface OrdersPipelineFixture extends WorkerSet {
  run: string;
  /** The data model of `public.orders` and its topic on the platform broker. */
  dm: string;
  topic: string;
  readonly source: ScratchDatabase;
  readonly target: ScratchDatabase;
  /** A POSTGRES_SOURCE worker capturing `public.orders` into the topic. */
  sourceConfig(): WorkerConfig;
  /**
   * A POSTGRES_TARGET worker writing the topic into `public.orders_copy` of
   * the target with `mapper`, `configuration` added to its own.
   */
  targetConfig(mapper: Record<string, unknown>[], configuration?: Record<string, unknown>): WorkerConfig;
}

export function ordersPipelineFixture(prefix: string, setup: string[]): OrdersPipelineFixture {
  const run = randomUUID().slice(0, 8);
  const brokers = testKafkaBrokers() ?? [];
  const dm = `dm-${run}`;
  const topic = `sluice.${dm}`;
  // Every worker's environment: the platform broker, a short batch linger.
  const workers = workerSet({ SLUICE_STREAM_BROKERS: brokers.join(','), SLUICE_BATCH_LINGER_MS: '20' });
  let source: ScratchDatabase | undefined;
  let target: ScratchDatabase | undefined;
  const opened = () => {
    if (!source || !target) throw new Error('the scratch databases are not there yet');
    return { source, target };
  };

  beforeAll(async () => {
    assertWorkerBuilt();
    if (!testPostgresUrl()) throw new Error('needs SLUICE_TEST_DATABASE_URL (scripts/with-postgres.sh)');
    source = await createScratchDatabase(`${prefix}_src`);
    target = await createScratchDatabase(`${prefix}_tgt`);
    for (const statement of setup) await source.client.query(statement);
  });
  afterAll(async () => {
    await workers.stopAll();
    await source?.drop();
    await target?.drop();
  });

  return {
    ...workers,
    run,
    dm,
    topic,
    get source() {
      return opened().source;
    },
    get target() {
      return opened().target;
    },
    sourceConfig: () => ({
      connector_id: `src_${run}`,
      connector_type: 'POSTGRES_SOURCE',
      role: 'source',
      configuration: { ...opened().source.settings, whitelist: ['public.orders'] },
      datamodels: [{ id: dm, name: 'orders', entry: 'public.orders', enabled: true, topic }],
    }),
    targetConfig: (mapper, configuration = {}) =>
      platformTargetConfig(run, {
        connectorType: 'POSTGRES_TARGET',
        configuration: { ...opened().target.settings, schema: 'public', ...configuration },
        datamodelId: dm,
        topic,
        table: 'orders_copy',
        mapper,
      }),
  };
}
