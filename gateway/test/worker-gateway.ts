import { afterAll, beforeAll } from '@jest/globals';
import { assertWorkerBuilt, WORKER_PROGRAM } from '@sluice/testing/kafka-helpers';
import { closeScanned, setupTeam, type TeamSetup } from './catalog-fixtures.js';
import { startTestGateway, type DbKind, type TestGateway } from './harness.js';

/**
 * A gateway whose embedded operator runs the built worker program as
 * processes (the process runtime), with `env` added to its configuration.
 */
export async function startWorkerGateway(
  kind: DbKind,
  env: Record<string, string> = {},
): Promise<TestGateway> {
  assertWorkerBuilt();
  return startTestGateway(kind, {
    SLUICE_EMBEDDED_OPERATOR: 'true',
    SLUICE_WORKER_COMMAND: JSON.stringify([process.execPath, WORKER_PROGRAM]),
    ...env,
  });
}

/** A gateway and a team, there from the describe block's `beforeAll` to its `afterAll`. */
export interface GatewayFixture {
  readonly gw: TestGateway;
  readonly t: TeamSetup;
}

/**
 * Registers, in the calling describe block, a worker gateway (PGlite) for
 * database pipelines and a team `team` in it. The workers inherit the
 * platform broker and a short batch linger from this process's environment,
 * set for the block and restored after it; the gateway may reach this
 * machine (it reaches the source itself, e.g. to drop a slot when a pipeline
 * is deleted). `afterAll` closes the gateway after the leak scan: register
 * the fixture before the hooks that drop the databases its workers use.
 */
export function workerGatewayFixture(team: string, brokers: string[]): GatewayFixture {
  let gw: TestGateway | undefined;
  let t: TeamSetup | undefined;
  let saved: NodeJS.ProcessEnv | undefined;

  beforeAll(async () => {
    saved = { ...process.env };
    process.env.SLUICE_STREAM_BROKERS = brokers.join(',');
    process.env.SLUICE_BATCH_LINGER_MS = '20';
    gw = await startWorkerGateway('pglite', { SLUICE_OUTBOUND_ALLOW_CIDRS: '127.0.0.1/32,::1/128' });
    t = await setupTeam(gw, team);
  });
  afterAll(async () => {
    if (gw) await closeScanned(gw);
    if (saved) process.env = saved;
  });

  return {
    get gw() {
      if (!gw) throw new Error('the worker gateway has not started');
      return gw;
    },
    get t() {
      if (!t) throw new Error('the worker gateway has no team yet');
      return t;
    },
  };
}
