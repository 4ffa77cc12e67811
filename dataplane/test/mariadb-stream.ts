import { afterAll, beforeAll, expect } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import type { WorkerConfig } from '@sluice/shared/catalog';
import { testKafkaBrokers } from '@sluice/testing/kafka';
import { readTopic } from '@sluice/testing/kafka-helpers';
import { startPrivateMariadb, type PrivateMariadb } from '@sluice/testing/mariadb-server';
import { arrivedEvents, type ArrivedEvent } from './numbered-rows.js';
import {
  gtidSequence,
  mariadbSource,
  mariadbSourceConfig,
  recordedPosition,
  untilRecorded,
  type MariadbSource,
} from './mariadb-numbered.js';
import { workerSet, type WorkerSet } from './worker-set.js';

/**
 * What a MariaDB source stream test runs against, named from `name`: a
 * scratch database with the numbered table and a topic of `partitions`
 * (mariadbSource), on the shared test server or, with `privateServer`, on a
 * server of the test's own (one it may stop, kill or freeze), and the
 * workers it started, each with the platform broker and `env`. Registers its
 * `beforeAll`/`afterAll` in the calling describe block: after the block the
 * workers are stopped, then the worker's position topic, the database, the
 * topic and the private server go. `source` and `server` are there once its
 * tests run.
 */
export interface MariadbStreamFixture extends WorkerSet {
  run: string;
  brokers: string[];
  connectorId: string;
  topic: string;
  readonly source: MariadbSource;
  /** The private server (`privateServer` only). */
  readonly server: PrivateMariadb;
  /** The worker configuration capturing the numbered table into the topic. */
  config(): WorkerConfig;
  /** Every numbered event on the topic. */
  arrived(): Promise<ArrivedEvent[]>;
  /** The newest position the worker recorded, or undefined before the first. */
  recorded(): Promise<{ file: string; offset: number; gtid: string } | undefined>;
  /** The GTID sequence of the newest recorded position (0 before the first). */
  recordedSequence(): Promise<number>;
  /** Waits until the worker recorded a position at or past `gtid`; fails fast when `failFast` says why. */
  untilRecorded(gtid: string, failFast: () => string | undefined, ms?: number): Promise<void>;
}

export function mariadbStreamFixture(
  name: string,
  options: { partitions: number; privateServer?: boolean; env?: Record<string, string> },
): MariadbStreamFixture {
  const run = randomUUID().slice(0, 8);
  const brokers = testKafkaBrokers() ?? [];
  const connectorId = `src_mariadb_${name}_${run}`;
  const topic = `sluice.mariadb-${name}-${run}`;
  const workers = workerSet({ SLUICE_STREAM_BROKERS: brokers.join(','), ...options.env });
  let server: PrivateMariadb | undefined;
  let source: MariadbSource | undefined;
  const opened = () => {
    if (!source) throw new Error('the MariaDB source is not there yet');
    return source;
  };

  beforeAll(async () => {
    if (options.privateServer) server = await startPrivateMariadb();
    source = await mariadbSource(`cdc_${name}`, brokers, topic, options.partitions, server?.url);
  });
  afterAll(async () => {
    await workers.stopAll();
    await source?.admin.deleteTopics({ topics: [`sluice-position.${connectorId}`] }).catch(() => undefined);
    // A private server a failed test left stopped does not answer: its database goes with it.
    await (server ? source?.close().catch(() => undefined) : source?.close());
    await server?.close();
  });

  const recorded = () => recordedPosition(brokers, opened().admin, connectorId);
  return {
    ...workers,
    run,
    brokers,
    connectorId,
    topic,
    get source() {
      return opened();
    },
    get server() {
      if (!server) throw new Error('no private MariaDB server (privateServer)');
      return server;
    },
    config: () => mariadbSourceConfig(connectorId, opened().database, topic, server?.url),
    arrived: async () => arrivedEvents(await readTopic(brokers, opened().admin, topic, 60_000)),
    recorded,
    recordedSequence: async () => gtidSequence((await recorded())?.gtid ?? ''),
    untilRecorded: (gtid, failFast, ms) =>
      untilRecorded(brokers, opened().admin, connectorId, gtid, failFast, ms),
  };
}

/** A worker killed mid-stream: the GTID sequence of the position it had recorded, and each partition's end then. */
export interface StreamKill {
  recorded: number;
  ends: bigint[];
}

/**
 * What kills of workers mid-stream may leave of rows 1..`rows` (`all`, every
 * event at the end; `transactionOf`, the GTID sequence of a row's
 * transaction), and no more: a recorded position was published (each row of
 * a transaction at or before it was on the broker at the kill), and delivery
 * is at least once, not more (what later workers sent is after it).
 */
export function expectKillsBounded(
  all: readonly ArrivedEvent[],
  kills: readonly StreamKill[],
  rows: number,
  transactionOf: (id: number) => number,
): void {
  for (const kill of kills) {
    const onBroker = new Set(all.filter((e) => e.offset < (kill.ends[e.partition] ?? 0n)).map((e) => e.id));
    const recordedNotPublished = Array.from({ length: rows }, (_, i) => i + 1).filter(
      (id) => transactionOf(id) <= kill.recorded && !onBroker.has(id),
    );
    expect(recordedNotPublished.slice(0, 10)).toEqual([]);
    const resentRecorded = all.filter(
      (e) => e.offset >= (kill.ends[e.partition] ?? 0n) && transactionOf(e.id) <= kill.recorded,
    );
    expect(resentRecorded.slice(0, 10)).toEqual([]);
  }
}
