import { expect, it } from '@jest/globals';
import { describeWithKafka } from '@sluice/testing/kafka';
import { purgeBinaryLogs } from '@sluice/testing/mariadb';
import { exitedEarly, freePort, startWorker, stopWorker } from '@sluice/testing/kafka-helpers';
import { numberedRow } from './numbered-rows.js';
import { mariadbSourceConfig, writeMariadbTransaction } from './mariadb-numbered.js';
import { mariadbStreamFixture } from './mariadb-stream.js';

// Errors of the MariaDB source a user can act on. A position the server no
// longer has: the worker is
// stopped, rows are written, and the binary logs holding them are purged
// (binlog_expire_logs_seconds does the same on a server left alone). The
// restarted worker must not skip to what is left: it stops in error, saying
// that the logs were purged and what to do. A platform broker it cannot
// reach: said as the broker's failure.

describeWithKafka('MariaDB source errors: a purged binary log, an unreachable platform broker', () => {
  const f = mariadbStreamFixture('purged', { partitions: 1 });

  it('ends in error naming the purge and the re-snapshot, never skipping the lost changes', async () => {
    const { conn } = f.source;
    const config = f.config();
    const first = await f.start(config);
    const gtid = await writeMariadbTransaction(conn, { inserts: [numberedRow(1, 0)] });
    await f.untilRecorded(gtid, () => exitedEarly(first, 'the source worker'));
    await stopWorker(first);

    // Changes the stopped worker never read, then the logs holding them purged.
    await writeMariadbTransaction(conn, { inserts: [numberedRow(2, 0)] });
    await purgeBinaryLogs(conn);

    const second = await f.start(config);
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
    expect(message).toContain(`sluice-position.${f.connectorId}`);
    console.info(message);
  });

  it('says a platform broker it cannot reach is the broker, not the database', async () => {
    const port = await freePort();
    const w = await startWorker(
      mariadbSourceConfig(`${f.connectorId}_nobroker`, f.source.database, f.topic),
      {
        SLUICE_STREAM_BROKERS: `127.0.0.1:${port}`,
      },
    );
    f.workers.push(w);
    expect(await w.exited).not.toBe(0);
    expect(w.terminationMessage()).toMatch(
      new RegExp(
        `^Opening the position topic on the platform stream broker failed: .*127\\.0\\.0\\.1:${port}`,
      ),
    );
  });
});
