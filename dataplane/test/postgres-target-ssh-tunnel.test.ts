import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { describeWithKafka } from '@sluice/testing/kafka';
import { eventually } from '@sluice/testing/kafka-helpers';
import { startBastion, type Bastion } from '@sluice/testing/sshd';
import { ordersPipelineFixture } from './orders-pipeline.js';
import { endWithin } from './worker-set.js';

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
  let bastion: Bastion;
  beforeAll(async () => {
    bastion = await startBastion();
  });
  const f = ordersPipelineFixture('ssh', [
    'create table public.orders (id int primary key, item text not null)',
    `insert into public.orders select g, 'item-' || g from generate_series(1, 100) g`,
  ]);
  afterAll(async () => {
    await bastion?.close();
  });

  const ids = async () =>
    (
      await f.target.client
        .query<{ id: number }>('select id::int as id from public.orders_copy order by id')
        .catch(() => ({ rows: [] as { id: number }[] }))
    ).rows.map((r) => r.id);

  it('writes rows through the tunnel, refuses a wrong host key, and resumes after the bastion restarts', async () => {
    const { source } = f;
    const where = `127.0.0.1:${bastion.port}`;
    const targetConfig = (tunnel: Record<string, unknown>) =>
      f.targetConfig(MAPPER, { ...bastion.tunnelFields(), ...tunnel });
    await f.startReady(f.sourceConfig());

    // A host key that is not the bastion's: the worker says so and writes nothing.
    const impostor = bastion.newUserKey('ed25519', 'openssh', { authorize: false }).publicLine;
    const refused = await f.start(targetConfig({ ssh_host_key: impostor }));
    await refused.exited;
    expect(refused.terminationMessage()).toContain(
      `SSH bastion ${where} presented the host key ssh-ed25519 ${bastion.hostKeys.ed25519.fingerprint}, not the expected`,
    );
    expect(await ids()).toEqual([]);

    // Through the tunnel: the snapshot's rows, then streamed ones.
    const tgt = await f.startReady(targetConfig({}));
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
    const ended = await endWithin(tgt, 60_000);
    expect(ended).not.toBe('still running');
    expect(tgt.terminationMessage()).toMatch(
      new RegExp(`(SSH bastion ${where.replace(/\./g, '\\.')}|The connection to SSH bastion)`),
    );
    console.info(`the target worker said: ${tgt.terminationMessage()}`);

    // Back: a restarted worker writes the rest, none lost.
    await bastion.start();
    await f.startReady(targetConfig({}));
    const all = await eventually(ids, (r) => r.length === 300);
    expect(all).toEqual(Array.from({ length: 300 }, (_, i) => i + 1));
  });
});
