import { expect, it } from '@jest/globals';
import type mysql from 'mysql2/promise';
import { describeWithKafka } from '@sluice/testing/kafka';
import { eventually, exitedEarly, stopWorker, type RunningWorker } from '@sluice/testing/kafka-helpers';
import { workerOutboundPolicy } from '../src/outbound.js';
import { measureBinlogRetention } from '../src/sources/binlog-retention.js';
import type { MysqlSourceSettings } from '../src/sources/mysql-cdc/contract.js';
import { numberedRow } from './numbered-rows.js';
import { mariadbSettings, writeMariadbTransaction } from './mariadb-numbered.js';
import { mariadbStreamFixture } from './mariadb-stream.js';

// The binary log figures of a MariaDB source on its worker's /metrics, on
// the real server and broker: the lag in bytes a stopped worker leaves
// (measured as the restarted worker resumes) and its fall once it caught
// up; after a rotation the worker needs the new log, not the old one (which
// the server may purge); a stopped worker's recorded position in a log that
// is no longer the current one, and one the server no longer holds. The
// server is shared: the test rotates its logs (FLUSH BINARY LOGS, which
// takes nothing from anyone) and purges none.

type Figures = { lag?: number; transactionsPerSecond?: number; needed?: Record<string, string | number> };

/** The binary log figures of a worker's /metrics text. */
function figures(text: string): Figures {
  const value = (name: string) => {
    const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
    return m ? Number(m[1]) : undefined;
  };
  const f: Figures = {};
  const lag = value('sluice_source_binlog_lag_bytes');
  if (lag !== undefined) f.lag = lag;
  const tps = value('sluice_source_transactions_per_second');
  if (tps !== undefined) f.transactionsPerSecond = tps;
  const m =
    /^sluice_source_binlog_logs_before_needed\{needed_file="([^"]+)",oldest_file="([^"]+)",current_file="([^"]+)"\} (\S+)$/m.exec(
      text,
    );
  if (m) f.needed = { needed: m[1]!, oldest: m[2]!, current: m[3]!, before: Number(m[4]) };
  return f;
}

async function heldLogs(conn: mysql.Connection): Promise<{ name: string; size: number }[]> {
  const [rows] = await conn.query('show binary logs');
  return (rows as { Log_name: string; File_size: string | number }[]).map((r) => ({
    name: r.Log_name,
    size: Number(r.File_size),
  }));
}

describeWithKafka('MariaDB source monitoring: lag in bytes, rates, the binary log it needs', () => {
  const stream = mariadbStreamFixture('binlog', {
    partitions: 1,
    // Long enough that the measurement a resuming worker makes first is still shown when read.
    env: { SLUICE_BINLOG_RETENTION_INTERVAL_MS: '4000' },
  });
  let worker: RunningWorker | undefined;
  let nextId = 1;
  const read = async () => figures(await worker!.metrics().catch(() => ''));
  const alive = () => {
    const failure = exitedEarly(worker!, 'the source worker');
    if (failure) throw new Error(failure);
  };
  const write = async (transactions: number, rows: number) => {
    let gtid = '';
    for (let t = 0; t < transactions; t++) {
      const inserts = Array.from({ length: rows }, () => numberedRow(nextId++, 0));
      gtid = await writeMariadbTransaction(stream.source.conn, { inserts });
    }
    return gtid;
  };

  it('shows the lag in bytes a stopped worker left, and its fall once the worker caught up', async () => {
    const { conn } = stream.source;
    const config = stream.config();
    worker = await stream.start(config);
    await stream.untilRecorded(await write(1, 1), () => exitedEarly(worker!, 'worker'));
    await stopWorker(worker);

    // What the stopped worker does not read: 20 transactions of 100 rows.
    const before = await heldLogs(conn);
    await write(20, 100);
    const after = await heldLogs(conn);
    const total = (logs: { size: number }[]) => logs.reduce((n, l) => n + l.size, 0);
    // Logs purged meanwhile by another test would only make this smaller than what was written.
    const written = total(after) - total(before);
    expect(written).toBeGreaterThan(100_000);

    worker = await stream.start(config);
    const resumed = await eventually(
      async () => (alive(), read()),
      (f) => f.lag !== undefined,
      60_000,
      25,
    );
    expect(resumed.lag).toBeGreaterThanOrEqual(written);
    // Caught up: the next measurements find it (close to) the server's position.
    const caughtUp = await eventually(
      async () => (alive(), read()),
      (f) => (f.lag ?? Infinity) < written / 10,
      60_000,
      250,
    );
    expect(caughtUp.needed).toMatchObject({ before: expect.any(Number) });
    // The 20 transactions were read within one interval: the rate of that interval says so.
    const rates = await eventually(
      async () => (alive(), read()),
      (f) => (f.transactionsPerSecond ?? 0) > 0,
      30_000,
      250,
    );
    expect(rates.transactionsPerSecond).toBeGreaterThan(0);
  }, 240_000);

  it('needs the new log after a rotation; a stopped worker needs an older one, then one purged', async () => {
    const { conn } = stream.source;
    await conn.query('flush binary logs');
    const current = (await heldLogs(conn)).at(-1)!.name;
    // An idle worker records the new log's start at its next heartbeat: it needs the old log no more.
    const rotated = await eventually(
      async () => (alive(), read()),
      (f) => f.needed?.needed === current,
      60_000,
      250,
    );
    expect(rotated.needed).toMatchObject({ needed: current, current });

    await stopWorker(worker!);
    const recorded = await stream.recorded();
    expect(recorded?.file).toBe(current);
    await conn.query('flush binary logs');
    const held = await heldLogs(conn);
    // The restarted worker's first measurement: it resumes in a log that is no longer the current one.
    worker = await stream.start(stream.config());
    const resumed = await eventually(
      async () => (alive(), read()),
      (f) => f.needed !== undefined,
      60_000,
      25,
    );
    expect(resumed.needed).toEqual({
      needed: current,
      oldest: held[0]!.name,
      current: held.at(-1)!.name,
      before: held.findIndex((l) => l.name === current),
    });
    expect(resumed.needed?.current).not.toBe(current);

    // A position in a log older than every log held: the server purged it.
    const oldest = held[0]!.name;
    const number = Number(/\.(\d+)$/.exec(oldest)![1]);
    const purged = `${oldest.replace(/\d+$/, '')}${String(number - 1).padStart(6, '0')}`;
    const gone = { file: purged, offset: 4, gtid: '' };
    const heldBytes = (await heldLogs(conn)).reduce((n, l) => n + l.size, 0);
    const measured = await measureBinlogRetention(
      mariadbSettings(stream.source.database) as MysqlSourceSettings,
      { read: gone, needed: gone },
      { engine: 'MariaDB', policy: workerOutboundPolicy() },
    );
    expect(measured).toMatchObject({ neededFile: purged, logsBeforeNeeded: -1, oldestFile: oldest });
    // Every byte held is behind it.
    expect(measured.lagBytes).toBeGreaterThanOrEqual(heldBytes);
  }, 240_000);
});
