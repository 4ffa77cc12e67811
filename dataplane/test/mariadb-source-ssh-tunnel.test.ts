import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { describeWithKafka } from '@sluice/testing/kafka';
import { eventually, exitedEarly, stopWorker, topicSize } from '@sluice/testing/kafka-helpers';
import { startBastion, type Bastion } from '@sluice/testing/sshd';
import { numberedRow } from './numbered-rows.js';
import { writeMariadbTransaction } from './mariadb-numbered.js';
import { mariadbStreamFixture } from './mariadb-stream.js';
import { expectEveryRowIntact } from './interrupted-stream.js';

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
  const f = mariadbStreamFixture('ssh', { partitions: 3 });
  let bastion: Bastion | undefined;

  beforeAll(async () => {
    bastion = await startBastion();
  });
  // Declared after the fixture's, so run after it: the workers stop before their bastion does.
  afterAll(async () => {
    await bastion?.close();
  });

  it('moves rows through the tunnel, says when the bastion is gone, and loses nothing', async () => {
    const { conn, admin } = f.source;
    const b = bastion!;
    const base = f.config();
    const config = { ...base, configuration: { ...base.configuration, ...b.tunnelFields() } };
    const first = await f.startReady(config);
    await f.untilRecorded('0-0-0', () => exitedEarly(first, 'the source worker'));

    let lastGtid = '';
    const outage = (async () => {
      await eventually(
        async () => {
          const failure = exitedEarly(first, 'the source worker');
          if (failure) throw new Error(failure);
          return topicSize(admin, f.topic);
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
    const second = await f.startReady(config);
    await f.untilRecorded(lastGtid, () => exitedEarly(second, 'the restarted worker'));
    await stopWorker(second);
    const all = await f.arrived();
    console.info(`${all.length} events for ${ROWS} rows; the worker said: ${said.trim().split('\n').pop()}`);
    expectEveryRowIntact(all, ROWS);
  });
});
