import { expect, it } from '@jest/globals';
import { describeWithKafka } from '@sluice/testing/kafka';
import { exitedEarly, readTopic, stopWorker, type RunningWorker } from '@sluice/testing/kafka-helpers';
import { arrivedEvents, numberedRow } from './numbered-rows.js';
import { gtidSequence, partitionEnds, writeMariadbTransaction } from './mariadb-numbered.js';
import { expectKillsBounded, mariadbStreamFixture, type StreamKill } from './mariadb-stream.js';
import { expectEveryRowIntact } from './interrupted-stream.js';

// The numbered table altered four times while the MariaDB source streams
// 20,000 numbered rows inserted in transactions of 100, the worker killed
// with SIGKILL twice, each time with an ALTER TABLE made while it is down:
// - a column added (`extra`, NOT NULL DEFAULT 7) while the first worker is
//   down, after rows it had not read;
// - `amount` widened (DECIMAL(12,2) to DECIMAL(14,2)) while a worker streams;
// - `extra` renamed to `bonus` while the second worker is down, after rows
//   it had not read;
// - `label` retyped (TEXT to MEDIUMTEXT) while a worker streams.
// Each restarted worker so reads rows written before the statement made while
// it was down, then the statement, then rows written after it. Whatever the
// server's binlog_row_metadata (the column names in the log or not), each
// statement is the only one between what a worker read and what it reads
// next, as docs/data-plane-mysql.md says a capture without the names follows.
//
// What is guaranteed, and so checked:
// - nothing is lost: every row arrives, its content intact (checksum), the
//   retyped columns' values as they were;
// - each event carries the columns its row had when written: no `extra`
//   before the column was added, `extra: 7` after, `bonus: 7` after the
//   rename, and nothing else;
// - at-least-once, as for kills without DDL: a restarted worker resends only
//   transactions after the position a killed worker had recorded, and every
//   transaction at or before that position was on the broker at the kill.

const PER_TRANSACTION = 100;
const TRANSACTIONS = 200;
/** Pause between transactions: the stream lasts through the kills and statements. */
const PACE_MS = 20;
/** Transactions written without pause just before each kill. */
const BURST = 8;
/** Transactions written while a killed worker is down, before and after the statement made then. */
const DOWN = 5;

/**
 * What is done before transaction `at` (an index): a kill, a restart, or a
 * statement, after which rows have `columns`; a `live` one is made while a
 * worker streams, once it read past the statement before.
 */
type Step = { at: number } & (
  { kill: true } | { restart: true } | { ddl: string; live: boolean; columns: readonly string[] }
);

const BASE = ['amount', 'doc', 'id', 'label', 'version'];
const STEPS: readonly Step[] = [
  { at: 30, kill: true },
  {
    at: 30 + DOWN,
    ddl: 'alter table numbered add column extra int not null default 7',
    live: false,
    columns: [...BASE, 'extra'],
  },
  { at: 30 + 2 * DOWN, restart: true },
  {
    at: 80,
    ddl: 'alter table numbered modify amount decimal(14,2) not null',
    live: true,
    columns: [...BASE, 'extra'],
  },
  { at: 120, kill: true },
  {
    at: 120 + DOWN,
    ddl: 'alter table numbered rename column extra to bonus',
    live: false,
    columns: [...BASE, 'bonus'],
  },
  { at: 120 + 2 * DOWN, restart: true },
  {
    at: 160,
    ddl: 'alter table numbered modify label mediumtext character set utf8mb4 not null',
    live: true,
    columns: [...BASE, 'bonus'],
  },
];

/** The columns, sorted, that the events of row `id` carry: those of the last statement made before it. */
function columnsOf(id: number): readonly string[] {
  const transaction = Math.floor((id - 1) / PER_TRANSACTION);
  let columns: readonly string[] = BASE;
  for (const s of STEPS) if ('ddl' in s && s.at <= transaction) columns = s.columns;
  return [...columns].sort();
}

describeWithKafka('MariaDB source: the captured table altered mid-stream, the worker killed twice', () => {
  const f = mariadbStreamFixture('ddlstream', { partitions: 3 });

  it('loses nothing, and each event carries the columns its row had when written', async () => {
    const started = Date.now();
    const { conn, admin } = f.source;
    const config = f.config();
    const failureOf = (w: RunningWorker) => () => exitedEarly(w, 'the source worker');
    const metadata = async () => {
      const [rows] = await conn.query('select @@global.binlog_row_metadata as m');
      return String((rows as { m: string }[])[0]?.m);
    };
    const metadataAtStart = await metadata();
    let worker = await f.startReady(config);
    // The snapshot (of the empty table) recorded: every later start streams.
    await f.untilRecorded('0-0-0', failureOf(worker));

    /** The running worker recorded a position at or past transaction `t` (its GTID). */
    const recordedPast = (gtids: readonly number[], t: number) =>
      f.untilRecorded(`0-1-${gtids[t]}`, failureOf(worker), 60_000);

    const gtids: number[] = [];
    const kills: (StreamKill & { committed: number })[] = [];
    let lastDdlAt = -1;
    for (let t = 0; t < TRANSACTIONS; t++) {
      const killIn = STEPS.find((s) => 'kill' in s && s.at >= t && s.at - t <= BURST)?.at;
      // Before a kill, the worker read past the last statement (a capture without the column names
      // follows one statement it has not read, not two); then a burst of transactions, so that the
      // kill lands while it reads and publishes them.
      if (killIn === t + BURST) await recordedPast(gtids, Math.max(lastDdlAt, t - 1));
      for (const step of STEPS.filter((s) => s.at === t)) {
        if ('kill' in step) {
          worker.child.kill('SIGKILL');
          await worker.exited;
          kills.push({
            recorded: await f.recordedSequence(),
            ends: await partitionEnds(admin, f.topic),
            committed: gtids.length,
          });
        } else if ('restart' in step) {
          worker = await f.startReady(config);
        } else {
          if (step.live && lastDdlAt >= 0) await recordedPast(gtids, lastDdlAt);
          await conn.query(step.ddl);
          lastDdlAt = t;
        }
      }
      const rows = Array.from({ length: PER_TRANSACTION }, (_, i) =>
        numberedRow(t * PER_TRANSACTION + i + 1, 0),
      );
      gtids.push(gtidSequence(await writeMariadbTransaction(conn, { inserts: rows })));
      if (killIn === undefined || killIn === t) await new Promise((r) => setTimeout(r, PACE_MS));
    }
    const ROWS = TRANSACTIONS * PER_TRANSACTION;
    const written = Date.now();
    await f.untilRecorded(`0-1-${gtids.at(-1)}`, failureOf(worker), 60_000);
    await stopWorker(worker);
    const messages = await readTopic(f.brokers, admin, f.topic, 60_000);
    const all = arrivedEvents(messages);
    const metadataAtEnd = await metadata();
    const atKills = kills.map((k) => {
      const unrecorded = gtids.slice(0, k.committed).filter((g) => g > k.recorded).length;
      return `${k.committed} (${unrecorded} not recorded)`;
    });
    console.info(
      `binlog_row_metadata ${metadataAtStart} at the start, ${metadataAtEnd} at the end; ` +
        `kills after transaction ${atKills.join(', ')} ` +
        `of ${gtids.length} transactions (GTIDs ${gtids[0]}..${gtids.at(-1)}); ` +
        `${all.length} events for ${ROWS} rows; written in ${written - started} ms, ` +
        `caught up ${Date.now() - written} ms later`,
    );

    // Nothing lost, nothing altered, whatever the statements did to the columns' types.
    expectEveryRowIntact(all, ROWS);

    // Each event has the columns its row had: none added before the statement, none left after it.
    const wrongColumns = messages.flatMap((m) => {
      const { key, after } = JSON.parse(m.value) as { key: { id: number }; after: Record<string, unknown> };
      const columns = Object.keys(after).sort();
      const expected = columnsOf(key.id);
      const added = expected.filter((c) => !BASE.includes(c));
      return columns.join() === expected.join() && added.every((c) => after[c] === 7)
        ? []
        : [{ id: key.id, expected, columns, added: added.map((c) => after[c]) }];
    });
    expect(wrongColumns.slice(0, 10)).toEqual([]);
    expect(wrongColumns).toHaveLength(0);

    const transactionOf = (id: number) => gtids[Math.floor((id - 1) / PER_TRANSACTION)] ?? Infinity;
    // Recorded means published, and at-least-once: nothing recorded at a kill was sent again.
    expectKillsBounded(all, kills, ROWS, transactionOf);
  });
});
