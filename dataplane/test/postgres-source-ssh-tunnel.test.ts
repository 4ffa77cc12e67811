import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { describeWithKafka } from '@sluice/testing/kafka';
import { startBastion, type Bastion } from '@sluice/testing/sshd';
import { dropPostgresCdc, measureSlotRetention, type PostgresSourceSettings } from '../src/index.js';
import { slotState } from './numbered-rows.js';
import { expectEveryRowIntact, interruptedStream, INTERRUPTED_STREAM } from './interrupted-stream.js';
import { numberedStreamFixture } from './numbered-stream.js';
import { endWithin } from './worker-set.js';

// The PostgreSQL source worker reaching its server only through a real
// OpenSSH bastion (testing/src/sshd.ts), and the bastion going down in the
// middle of a stream: 20,000 numbered rows in transactions of 500, the
// bastion killed (with every session it forked) once 4,000 events are on the
// broker while the inserts go on, the last of them after it went down
// (interrupted-stream.ts).
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

describeWithKafka('PostgreSQL source through an SSH bastion that restarts mid-stream', () => {
  let bastion: Bastion | undefined;
  beforeAll(async () => {
    bastion = await startBastion();
  });
  const f = numberedStreamFixture('ssh');
  afterAll(async () => {
    await bastion?.close();
  });

  it('moves rows through the tunnel, says when the bastion is gone, and loses nothing across its restart', async () => {
    const { connectorId, slot } = f;
    const b = bastion!;
    const base = f.config();
    const config = { ...base, configuration: { ...base.configuration, ...b.tunnelFields() } };
    const where = `127.0.0.1:${b.port}`;

    let said = '';
    const { committedAtInterruption: committedAtOutage, all } = await interruptedStream(f, {
      config,
      interrupt: () => b.stop(),
      whileDown: async (first) => {
        // The worker ends with the tunnel's sentence: the runtime shows it as the connector's error.
        const code = await endWithin(first, 60_000);
        expect(code).not.toBe('still running');
        expect(code).not.toBe(0);
        said = first.terminationMessage() ?? first.output();
        expect(said).toContain(`The connection to SSH bastion ${where} was lost`);

        // Started again while the bastion is down: it says the bastion is unreachable.
        const early = await f.start(config);
        await early.exited;
        expect(early.terminationMessage() ?? early.output()).toContain(
          `Connection refused by SSH bastion ${where}: nothing listens there`,
        );

        // The bastion back, the restarted worker resumes and catches up.
        await b.start();
      },
    });
    console.info(
      `bastion stopped with ${committedAtOutage} rows committed; ${all.length} events for ${INTERRUPTED_STREAM.rows} rows in all; ` +
        `the worker said: ${said.trim().split('\n').pop()}`,
    );
    expect(committedAtOutage).toBeLessThan(INTERRUPTED_STREAM.rows);

    // Nothing lost, nothing altered.
    expectEveryRowIntact(all);

    // The gateway's side of a tunnelled source: the slot measured and the capture released through the bastion.
    const settings = config.configuration as unknown as PostgresSourceSettings;
    const measured = await measureSlotRetention(settings, { connectorId });
    expect(measured).toEqual({ slot, retainedWalBytes: expect.any(Number) });
    await dropPostgresCdc(settings, { connectorId });
    expect(await slotState(f.monitor, slot)).toBeUndefined();
  });
});
