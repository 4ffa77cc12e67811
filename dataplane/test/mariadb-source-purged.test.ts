import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { describeWithKafka, testKafkaBrokers } from '@sluice/testing/kafka';
import { purgeBinaryLogs } from '@sluice/testing/mariadb';
import {
  exitedEarly,
  freePort,
  startWorker,
  stopWorker,
  type RunningWorker,
} from '@sluice/testing/kafka-helpers';
import { numberedRow } from './numbered-rows.js';
import {
  mariadbSource,
  mariadbSourceConfig,
  untilRecorded,
  writeMariadbTransaction,
  type MariadbSource,
} from './mariadb-numbered.js';

// Errors of the MariaDB source a user can act on. A position the server no
// longer has: the worker is
// stopped, rows are written, and the binary logs holding them are purged
// (binlog_expire_logs_seconds does the same on a server left alone). The
// restarted worker must not skip to what is left: it stops in error, saying
// that the logs were purged and what to do. A platform broker it cannot
// reach: said as the broker's failure.

describeWithKafka('MariaDB source errors: a purged binary log, an unreachable platform broker', () => {
  const run = randomUUID().slice(0, 8);
  const brokers = testKafkaBrokers() ?? [];
  const connectorId = `src_mariadb_purged_${run}`;
  const topic = `sluice.mariadb-purged-${run}`;
  let source: MariadbSource | undefined;
  const workers: RunningWorker[] = [];

  beforeAll(async () => {
    source = await mariadbSource('cdc_purged', brokers, topic, 1);
  });
  afterAll(async () => {
    for (const w of workers) await stopWorker(w);
    await source?.admin.deleteTopics({ topics: [`sluice-position.${connectorId}`] }).catch(() => undefined);
    await source?.close();
  });

  it('ends in error naming the purge and the re-snapshot, never skipping the lost changes', async () => {
    const { database, conn, admin } = source!;
    const config = mariadbSourceConfig(connectorId, database, topic);
    const env = { SLUICE_STREAM_BROKERS: brokers.join(',') };
    const first = await startWorker(config, env);
    workers.push(first);
    const gtid = await writeMariadbTransaction(conn, { inserts: [numberedRow(1, 0)] });
    await untilRecorded(brokers, admin, connectorId, gtid, () => exitedEarly(first, 'the source worker'));
    await stopWorker(first);

    // Changes the stopped worker never read, then the logs holding them purged.
    await writeMariadbTransaction(conn, { inserts: [numberedRow(2, 0)] });
    await purgeBinaryLogs(conn);

    const second = await startWorker(config, env);
    workers.push(second);
    const code = await Promise.race([
      second.exited,
      new Promise<'running'>((r) => setTimeout(() => r('running'), 30_000)),
    ]);
    expect(code).not.toBe('running');
    expect(code).not.toBe(0);
    const message = second.terminationMessage() ?? '';
    expect(message).toMatch(
      /no longer has the binary log this connector resumes from \(GTID position 0-\d+-\d+\)/,
    );
    expect(message).toMatch(/purged/);
    expect(message).toMatch(/take a new snapshot/);
    expect(message).toContain(`sluice-position.${connectorId}`);
    console.info(message);
  });

  it('says a platform broker it cannot reach is the broker, not the database', async () => {
    const { database } = source!;
    const port = await freePort();
    const w = await startWorker(mariadbSourceConfig(`${connectorId}_nobroker`, database, topic), {
      SLUICE_STREAM_BROKERS: `127.0.0.1:${port}`,
    });
    workers.push(w);
    expect(await w.exited).not.toBe(0);
    expect(w.terminationMessage()).toMatch(
      new RegExp(
        `^Opening the position topic on the platform stream broker failed: .*127\\.0\\.0\\.1:${port}`,
      ),
    );
  });
});
