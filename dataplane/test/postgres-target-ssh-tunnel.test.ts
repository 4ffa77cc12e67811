import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import type { WorkerConfig } from '@sluice/shared/catalog';
import { describeWithKafka, testKafkaBrokers } from '@sluice/testing/kafka';
import { createScratchDatabase, testPostgresUrl, type ScratchDatabase } from '@sluice/testing/postgres';
import {
  assertWorkerBuilt,
  eventually,
  startWorker,
  stopWorker,
  waitReady,
  type RunningWorker,
} from '@sluice/testing/kafka-helpers';
import { startBastion, type Bastion } from '@sluice/testing/sshd';
import { platformTargetConfig } from './platform-target-config.js';

// A POSTGRES_TARGET worker writing through a real OpenSSH bastion
// (testing/src/sshd.ts): rows a source worker captures arrive in the target
// table through the tunnel; with a host key that is not the bastion's the
// worker refuses to start and says which key it saw (so the tunnel is really
// in the path); when the bastion goes down the worker stops with the
// tunnel's sentence, and once it is back a restarted worker writes what was
// left, none lost (the consumer's offsets move only after a write).

const MAPPER = [
  { key: 'id', path: 'id', cast: 'int', primary_key: true },
  { key: 'item', path: 'item' },
];

describeWithKafka('PostgreSQL target through an SSH bastion (worker program)', () => {
  const run = randomUUID().slice(0, 8);
  const brokers = testKafkaBrokers() ?? [];
  let source: ScratchDatabase;
  let target: ScratchDatabase;
  let bastion: Bastion;
  const workers: RunningWorker[] = [];

  beforeAll(async () => {
    assertWorkerBuilt();
    if (!testPostgresUrl()) throw new Error('needs SLUICE_TEST_DATABASE_URL (scripts/with-postgres.sh)');
    bastion = await startBastion();
    source = await createScratchDatabase('ssh_src');
    target = await createScratchDatabase('ssh_tgt');
    await source.client.query('create table public.orders (id int primary key, item text not null)');
    await source.client.query(
      `insert into public.orders select g, 'item-' || g from generate_series(1, 100) g`,
    );
  });
  afterAll(async () => {
    for (const w of workers) await stopWorker(w);
    await source?.drop();
    await target?.drop();
    await bastion?.close();
  });

  const ids = async () =>
    (
      await target.client
        .query<{ id: number }>('select id::int as id from public.orders_copy order by id')
        .catch(() => ({ rows: [] as { id: number }[] }))
    ).rows.map((r) => r.id);

  it('writes rows through the tunnel, refuses a wrong host key, and resumes after the bastion restarts', async () => {
    const dm = `dm-${run}`;
    const topic = `sluice.${dm}`;
    const where = `127.0.0.1:${bastion.port}`;
    const sourceConfig: WorkerConfig = {
      connector_id: `src_${run}`,
      connector_type: 'POSTGRES_SOURCE',
      role: 'source',
      configuration: { ...source.settings, whitelist: ['public.orders'] },
      datamodels: [{ id: dm, name: 'orders', entry: 'public.orders', enabled: true, topic }],
    };
    const targetConfig = (tunnel: Record<string, unknown>) =>
      platformTargetConfig(run, {
        connectorType: 'POSTGRES_TARGET',
        configuration: { ...target.settings, schema: 'public', ...bastion.tunnelFields(), ...tunnel },
        datamodelId: dm,
        topic,
        table: 'orders_copy',
        mapper: MAPPER,
      });
    const env = { SLUICE_STREAM_BROKERS: brokers.join(','), SLUICE_BATCH_LINGER_MS: '20' };
    const src = await startWorker(sourceConfig, env);
    workers.push(src);
    await waitReady(src);

    // A host key that is not the bastion's: the worker says so and writes nothing.
    const impostor = bastion.newUserKey('ed25519', 'openssh', { authorize: false }).publicLine;
    const refused = await startWorker(targetConfig({ ssh_host_key: impostor }), env);
    workers.push(refused);
    await refused.exited;
    expect(refused.terminationMessage()).toContain(
      `SSH bastion ${where} presented the host key ssh-ed25519 ${bastion.hostKeys.ed25519.fingerprint}, not the expected`,
    );
    expect(await ids()).toEqual([]);

    // Through the tunnel: the snapshot's rows, then streamed ones.
    const tgt = await startWorker(targetConfig({}), env);
    workers.push(tgt);
    await waitReady(tgt);
    await eventually(ids, (r) => r.length === 100);
    await source.client.query(
      `insert into public.orders select g, 'item-' || g from generate_series(101, 200) g`,
    );
    await eventually(ids, (r) => r.length === 200);

    // The bastion goes: the next write fails with the tunnel's sentence and the worker stops.
    await bastion.stop();
    await source.client.query(
      `insert into public.orders select g, 'item-' || g from generate_series(201, 300) g`,
    );
    let timer: NodeJS.Timeout | undefined;
    const ended = await Promise.race([
      tgt.exited,
      new Promise<string>((r) => (timer = setTimeout(() => r('still running'), 60_000))),
    ]).finally(() => clearTimeout(timer));
    expect(ended).not.toBe('still running');
    expect(tgt.terminationMessage()).toMatch(
      new RegExp(`(SSH bastion ${where.replace(/\./g, '\\.')}|The connection to SSH bastion)`),
    );
    console.info(`the target worker said: ${tgt.terminationMessage()}`);

    // Back: a restarted worker writes the rest, none lost.
    await bastion.start();
    const again = await startWorker(targetConfig({}), env);
    workers.push(again);
    await waitReady(again);
    const all = await eventually(ids, (r) => r.length === 300);
    expect(all).toEqual(Array.from({ length: 300 }, (_, i) => i + 1));
  });
});
