import { afterAll, beforeAll } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { WorkerConfig } from '@sluice/shared/catalog';
import { cdcNames } from '@sluice/shared/connectors';
import { testKafkaBrokers } from '@sluice/testing/kafka';
import { numberedSource, numberedSourceConfig, type NumberedSource } from './numbered-rows.js';
import { workerSet, type WorkerSet } from './worker-set.js';

/**
 * What a PostgreSQL source stream test runs against, named from `name`: a
 * scratch database with the numbered table and a 3-partition topic
 * (numberedSource), a client reading the slot while the inserts run on the
 * database's own, and the workers it started (stopped after the block).
 * Registers its `beforeAll`/`afterAll` in the calling describe block;
 * `source` and `monitor` are there once its tests run.
 */
export interface NumberedStreamFixture extends WorkerSet {
  run: string;
  brokers: string[];
  connectorId: string;
  topic: string;
  slot: string;
  readonly source: NumberedSource;
  readonly monitor: pg.Client;
  /** The worker configuration capturing the numbered table into the topic. */
  config(): WorkerConfig;
}

export function numberedStreamFixture(name: string): NumberedStreamFixture {
  const run = randomUUID().slice(0, 8);
  const brokers = testKafkaBrokers() ?? [];
  const connectorId = `src_${name}_${run}`;
  const topic = `sluice.${name}-${run}`;
  // Every worker's environment: the platform broker.
  const workers = workerSet({ SLUICE_STREAM_BROKERS: brokers.join(',') });
  let source: NumberedSource | undefined;
  let monitor: pg.Client | undefined;
  const opened = () => {
    if (!source || !monitor) throw new Error('the numbered source is not there yet');
    return { source, monitor };
  };

  beforeAll(async () => {
    source = await numberedSource(`cdc_${name}`, brokers, topic, 3);
    monitor = new pg.Client({ ...source.db.settings, ssl: false });
    await monitor.connect();
  });
  afterAll(async () => {
    await workers.stopAll();
    await monitor?.end();
    await source?.close();
  });

  return {
    ...workers,
    run,
    brokers,
    connectorId,
    topic,
    slot: cdcNames(connectorId).slot,
    get source() {
      return opened().source;
    },
    get monitor() {
      return opened().monitor;
    },
    config: () => numberedSourceConfig(connectorId, opened().source.db, topic, run),
  };
}
