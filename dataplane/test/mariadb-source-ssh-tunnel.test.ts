import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
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
import { arrivedEvents, lostOrAltered, numberedRow } from './numbered-rows.js';
import {
  mariadbSource,
  mariadbSourceConfig,
  untilRecorded,
  writeMariadbTransaction,
  type MariadbSource,
} from './mariadb-numbered.js';

// The MariaDB source worker reaching its server only through a real OpenSSH
// bastion (testing/src/sshd.ts), and the bastion going down mid-stream:
// 10,000 numbered rows in transactions of 250, the bastion stopped once
// 2,000 events are on the broker. The worker moves rows through the tunnel,
// stops with the tunnel's sentence when the bastion goes (its connector's
// error; never a silent direct connection), and once the bastion is back the
// restarted worker resumes from its recorded position: nothing is lost.

const ROWS = 10_000;
const PER_TRANSACTION = 250;
const TRANSACTIONS = ROWS / PER_TRANSACTION;
const OUTAGE_AT_EVENTS = 2_000;
const AFTER_OUTAGE = 8;

describeWithKafka('MariaDB source through an SSH bastion that stops mid-stream', () => {
  const run = randomUUID().slice(0, 8);
  const brokers = testKafkaBrokers() ?? [];
  const connectorId = `src_mariadb_ssh_${run}`;
  const topic = `sluice.mariadb-ssh-${run}`;
  let source: MariadbSource | undefined;
  let bastion: Bastion | undefined;
  const workers: RunningWorker[] = [];

  beforeAll(async () => {
    bastion = await startBastion();
    source = await mariadbSource('cdc_ssh', brokers, topic, 3);
  });
  afterAll(async () => {
    for (const w of workers) await stopWorker(w);
    await source?.admin.deleteTopics({ topics: [`sluice-position.${connectorId}`] }).catch(() => undefined);
    await source?.close();
    await bastion?.close();
  });

  it('moves rows through the tunnel, says when the bastion is gone, and loses nothing', async () => {
    const { database, conn, admin } = source!;
    const b = bastion!;
    const base = mariadbSourceConfig(connectorId, database, topic);
    const config = { ...base, configuration: { ...base.configuration, ...b.tunnelFields() } };
    const env = { SLUICE_STREAM_BROKERS: brokers.join(',') };
    const first = await startWorker(config, env);
    workers.push(first);
    await waitReady(first);
    await untilRecorded(brokers, admin, connectorId, '0-0-0', () => exitedEarly(first, 'the source worker'));

    let lastGtid = '';
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
      await b.stop();
    })();
    const inserted = (async () => {
      for (let t = 0; t < TRANSACTIONS; t++) {
        if (t === TRANSACTIONS - AFTER_OUTAGE) await outage;
        const rows = Array.from({ length: PER_TRANSACTION }, (_, i) =>
          numberedRow(t * PER_TRANSACTION + i + 1, 0),
        );
        lastGtid = await writeMariadbTransaction(conn, { inserts: rows });
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    inserted.catch(() => undefined);
    await outage;

    let timer: NodeJS.Timeout | undefined;
    const code = await Promise.race([
      first.exited,
      new Promise<string>((r) => (timer = setTimeout(() => r('still running'), 60_000))),
    ]).finally(() => clearTimeout(timer));
    expect(code).not.toBe('still running');
    expect(code).not.toBe(0);
    const said = first.terminationMessage() ?? first.output();
    expect(said).toContain(`SSH bastion 127.0.0.1:${b.port}`);

    await b.start();
    await inserted;
    const second = await startWorker(config, env);
    workers.push(second);
    await waitReady(second);
    await untilRecorded(brokers, admin, connectorId, lastGtid, () =>
      exitedEarly(second, 'the restarted worker'),
    );
    await stopWorker(second);
    const all = arrivedEvents(await readTopic(brokers, admin, topic));
    console.info(`${all.length} events for ${ROWS} rows; the worker said: ${said.trim().split('\n').pop()}`);
    const { missing, wrong } = lostOrAltered(all, ROWS);
    expect({ missing: missing.slice(0, 10), wrong: wrong.slice(0, 10) }).toEqual({ missing: [], wrong: [] });
  });
});
