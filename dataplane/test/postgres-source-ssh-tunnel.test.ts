import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { cdcNames } from '@sluice/shared/connectors';
import { describeWithKafka, testKafkaBrokers } from '@sluice/testing/kafka';
import {
  eventually,
  exitedEarly,
  readTopic,
  startWorker,
  stopWorker,
  topicSize,
  waitReady,
  type RunningWorker,
} from '@sluice/testing/kafka-helpers';
import { startBastion, type Bastion } from '@sluice/testing/sshd';
import { dropPostgresCdc, measureSlotRetention, type PostgresSourceSettings } from '../src/index.js';
import {
  arrivedEvents,
  lostOrAltered,
  numberedRow,
  numberedSource,
  numberedSourceConfig,
  slotState,
  untilConfirmed,
  writeTransaction,
  type NumberedSource,
} from './numbered-rows.js';

// The PostgreSQL source worker reaching its server only through a real
// OpenSSH bastion (testing/src/sshd.ts), and the bastion going down in the
// middle of a stream: 20,000 numbered rows in transactions of 500, the
// bastion killed (with every session it forked) once 4,000 events are on the
// broker while the inserts go on, the last of them after it went down.
//
// What a user notices, and so what is checked:
// - the worker moves rows through the tunnel;
// - when the bastion goes, the worker stops with a sentence saying so (its
//   connector's error), and a worker started while the bastion is still down
//   says the bastion is unreachable — never a silent direct connection;
// - once the bastion is back, the restarted worker (the runtime's restart)
//   resumes from what the slot confirmed and nothing is lost: every one of
//   the 20,000 rows arrives, its content intact (checksum);
// - the gateway's slot measurement and capture release go through the
//   bastion too.

const ROWS = 20_000;
const PER_TRANSACTION = 500;
const TRANSACTIONS = ROWS / PER_TRANSACTION;
const OUTAGE_AT_EVENTS = 4_000;
/** The inserter waits for the outage before these last transactions: the outage lands mid-stream. */
const AFTER_OUTAGE = 10;

describeWithKafka('PostgreSQL source through an SSH bastion that restarts mid-stream', () => {
  const run = randomUUID().slice(0, 8);
  const brokers = testKafkaBrokers() ?? [];
  const connectorId = `src_ssh_${run}`;
  const topic = `sluice.ssh-${run}`;
  const { slot } = cdcNames(connectorId);
  let source: NumberedSource | undefined;
  let bastion: Bastion | undefined;
  let monitor: pg.Client;
  const workers: RunningWorker[] = [];

  beforeAll(async () => {
    bastion = await startBastion();
    source = await numberedSource('cdc_ssh', brokers, topic, 3);
    monitor = new pg.Client({ ...source.db.settings, ssl: false });
    await monitor.connect();
  });
  afterAll(async () => {
    for (const w of workers) await stopWorker(w);
    await monitor?.end();
    await source?.close();
    await bastion?.close();
  });

  it('moves rows through the tunnel, says when the bastion is gone, and loses nothing across its restart', async () => {
    const { db, admin } = source!;
    const b = bastion!;
    const base = numberedSourceConfig(connectorId, db, topic, run);
    const config = { ...base, configuration: { ...base.configuration, ...b.tunnelFields() } };
    const env = { SLUICE_STREAM_BROKERS: brokers.join(',') };
    const where = `127.0.0.1:${b.port}`;

    const first = await startWorker(config, env);
    workers.push(first);
    await waitReady(first);

    let committedAtOutage = 0;
    const bounds: { before: bigint; after: bigint }[] = [];
    const outage = (async () => {
      await eventually(
        async () => {
          const failure = exitedEarly(first, 'the source worker');
          if (failure) throw new Error(failure);
          return topicSize(admin, topic);
        },
        (n) => n >= OUTAGE_AT_EVENTS,
        90_000,
        20,
      );
      committedAtOutage = bounds.length * PER_TRANSACTION;
      await b.stop();
    })();
    const inserted = (async () => {
      for (let t = 0; t < TRANSACTIONS; t++) {
        if (t === TRANSACTIONS - AFTER_OUTAGE) await outage;
        const rows = Array.from({ length: PER_TRANSACTION }, (_, i) =>
          numberedRow(t * PER_TRANSACTION + i + 1, 0),
        );
        bounds.push(await writeTransaction(db.client, { inserts: rows }));
      }
    })();
    inserted.catch(() => undefined);
    await outage;

    // The worker ends with the tunnel's sentence: the runtime shows it as the connector's error.
    let timer: NodeJS.Timeout | undefined;
    const code = await Promise.race([
      first.exited,
      new Promise<string>((r) => (timer = setTimeout(() => r('still running'), 60_000))),
    ]).finally(() => clearTimeout(timer));
    expect(code).not.toBe('still running');
    expect(code).not.toBe(0);
    const said = first.terminationMessage() ?? first.output();
    expect(said).toContain(`The connection to SSH bastion ${where} was lost`);

    // Started again while the bastion is down: it says the bastion is unreachable.
    const early = await startWorker(config, env);
    workers.push(early);
    await early.exited;
    expect(early.terminationMessage() ?? early.output()).toContain(
      `Connection refused by SSH bastion ${where}: nothing listens there`,
    );

    // The bastion back, the restarted worker resumes and catches up.
    await b.start();
    await inserted;
    const second = await startWorker(config, env);
    workers.push(second);
    await waitReady(second);
    await untilConfirmed(monitor, slot, bounds[bounds.length - 1]?.after ?? 0n, () =>
      exitedEarly(second, 'the restarted source worker'),
    );
    await stopWorker(second);
    const all = arrivedEvents(await readTopic(brokers, admin, topic));
    console.info(
      `bastion stopped with ${committedAtOutage} rows committed; ${all.length} events for ${ROWS} rows in all; ` +
        `the worker said: ${said.trim().split('\n').pop()}`,
    );
    expect(committedAtOutage).toBeLessThan(ROWS);

    // Nothing lost, nothing altered.
    const { missing, wrong } = lostOrAltered(all, ROWS);
    expect({ missing: missing.slice(0, 10), wrong: wrong.slice(0, 10) }).toEqual({ missing: [], wrong: [] });
    expect(missing).toHaveLength(0);
    expect(wrong).toHaveLength(0);

    // The gateway's side of a tunnelled source: the slot measured and the capture released through the bastion.
    const settings = config.configuration as unknown as PostgresSourceSettings;
    const measured = await measureSlotRetention(settings, { connectorId });
    expect(measured).toEqual({ slot, retainedWalBytes: expect.any(Number) });
    await dropPostgresCdc(settings, { connectorId });
    expect(await slotState(monitor, slot)).toBeUndefined();
  });
});
