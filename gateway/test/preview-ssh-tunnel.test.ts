import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { describeWithKafka, testKafkaBrokers } from '@sluice/testing/kafka';
import { createScratchDatabase, testPostgresUrl, type ScratchDatabase } from '@sluice/testing/postgres';
import { startBastion, type Bastion } from '@sluice/testing/sshd';
import { closeScanned, setupTeam, type TeamSetup } from './catalog-fixtures.js';
import { expectBastionRefusal } from './bastion-outage.js';
import { startTestGateway, type TestGateway } from './harness.js';

// The preview of a pipeline whose PostgreSQL source and target both sit
// behind a real OpenSSH bastion (testing/src/sshd.ts): the source's rows are
// sampled and the target's table looked up through the tunnel, and with the
// bastion down the answer is the tunnel's sentence (502), not a connection
// to the database's address.

const run = randomUUID().slice(0, 8);

describeWithKafka('preview through an SSH bastion', () => {
  const brokers = testKafkaBrokers() ?? [];
  const streamBrokersBefore = process.env.SLUICE_STREAM_BROKERS;
  let gw: TestGateway;
  let t: TeamSetup;
  let bastion: Bastion;
  let source: ScratchDatabase;
  let target: ScratchDatabase;
  const tunnelled = (db: ScratchDatabase) => ({
    ...db.settings,
    // The test server trusts local connections; the connector schema wants a password anyway.
    password: db.settings.password || `unused-${run}`,
    ...bastion.tunnelFields(),
  });

  beforeAll(async () => {
    if (!testPostgresUrl()) throw new Error('needs SLUICE_TEST_DATABASE_URL (scripts/with-postgres.sh)');
    process.env.SLUICE_STREAM_BROKERS = brokers.join(',');
    bastion = await startBastion();
    gw = await startTestGateway('pglite', { SLUICE_OUTBOUND_ALLOW_CIDRS: '127.0.0.1/32,::1/128' });
    t = await setupTeam(gw, 'preview-ssh');
    source = await createScratchDatabase('preview_ssh_src');
    target = await createScratchDatabase('preview_ssh_tgt');
    await source.client.query('create table public.orders (id bigint primary key, status text)');
    await source.client.query("insert into public.orders values (1, 'new'), (2, 'paid')");
  });
  afterAll(async () => {
    if (streamBrokersBefore === undefined) delete process.env.SLUICE_STREAM_BROKERS;
    else process.env.SLUICE_STREAM_BROKERS = streamBrokersBefore;
    await source?.drop();
    await target?.drop();
    await bastion?.close();
    if (gw) await closeScanned(gw);
  });

  it('samples the source and looks up the target through the tunnel; a bastion down is a 502 saying so', async () => {
    const created = await gw.http
      .post('/api/pipelines/')
      .set(t.owner.auth)
      .send({
        team_id: t.teamId,
        name: `preview-ssh-${run}`,
        source_name: `preview-ssh-src-${run}`,
        source_type: 'POSTGRES_SOURCE',
        source_config: { ...tunnelled(source), whitelist: ['public.orders'] },
        target_name: `preview-ssh-dst-${run}`,
        target_type: 'POSTGRES_TARGET',
        target_config: tunnelled(target),
        subscription_target_table_name: `copy_${run}`,
        subscription_mapper_config: [
          { key: 'id', path: 'id', cast: 'int', primary_key: true },
          { key: 'status', path: 'status' },
        ],
      });
    expect(created.status).toBe(201);
    const preview = () =>
      gw.http.post(`/api/pipelines/${created.body.id}/preview`).set(t.owner.auth).send({});

    const res = await preview();
    expect(res.status).toBe(200);
    expect(res.body.rows.map((r: { row: unknown }) => r.row)).toEqual([
      { id: 1, status: 'new' },
      { id: 2, status: 'paid' },
    ]);
    expect(res.body.ddl.tables[0]).toMatchObject({ table: `copy_${run}`, exists: false });

    await expectBastionRefusal(bastion, preview);
  });
});
