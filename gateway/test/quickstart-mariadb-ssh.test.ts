import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { describeWithKafka, testKafkaBrokers } from '@sluice/testing/kafka';
import { eventually, WORKER_PROGRAM } from '@sluice/testing/kafka-helpers';
import { closeScanned, reachState, setupTeam, type TeamSetup } from './catalog-fixtures.js';
import { startTestGateway, type TestGateway } from './harness.js';
import { readmeMariadbSql, readmePipelineBody } from './readme-section.js';
import { startTunnelledDatabases, type TunnelledDatabases } from './tunnelled-databases.js';

// The README's "A MariaDB source through an SSH bastion" as a new user
// follows it: the SQL its `mariadb -e` commands run and its pipeline body are
// read from the README itself (with the shell's variables of
// .sluice/sandbox.env substituted: the test's MariaDB and PostgreSQL servers
// and a real OpenSSH bastion), and the target table must show what the
// README says it shows. If the section stops working, this test fails.

const SECTION = 'A MariaDB source through an SSH bastion';

describeWithKafka("the README's MariaDB → PostgreSQL pipeline through an SSH bastion (real workers)", () => {
  const brokers = testKafkaBrokers() ?? [];
  const saved = { ...process.env };
  let dbs: TunnelledDatabases;
  let gw: TestGateway;
  let t: TeamSetup;

  beforeAll(async () => {
    // The README's mariadb commands hold several statements each: the connection takes them so.
    dbs = await startTunnelledDatabases('readme_ssh');
    // As the README starts Sluice: the sandbox's broker as the platform stream broker.
    process.env.SLUICE_STREAM_BROKERS = brokers.join(',');
    gw = await startTestGateway('pglite', {
      SLUICE_EMBEDDED_OPERATOR: 'true',
      SLUICE_WORKER_COMMAND: JSON.stringify([process.execPath, WORKER_PROGRAM]),
    });
    t = await setupTeam(gw, 'readme-ssh');
  });
  afterAll(async () => {
    if (gw) await closeScanned(gw);
    process.env = saved;
    await dbs?.close();
  });

  const customers = async () =>
    (
      await dbs.target.client
        .query('select id::int as id, name, tier from public.customers order by id')
        .catch(() => ({ rows: [] }))
    ).rows as { id: number; name: string; tier: string | null }[];

  it('goes live through the bastion; the table shows the snapshot, then the transaction', async () => {
    const [create, change] = readmeMariadbSql(SECTION);
    expect(create).toBeDefined();
    expect(change).toBeDefined();
    await dbs.source.query(create!);

    const { mariadb: url, target } = dbs;
    const tunnel = dbs.bastion.tunnelFields();
    const body = readmePipelineBody(SECTION, {
      TEAM: t.teamId,
      MARIADB_HOST: url.hostname,
      MARIADB_PORT: url.port,
      MARIADB_USER: decodeURIComponent(url.username),
      MARIADB_PASSWORD: decodeURIComponent(url.password),
      MARIADB_DATABASE: dbs.database,
      PG_HOST: target.settings.host,
      PG_PORT: String(target.settings.port),
      PG_USER: target.settings.user,
      SSH_HOST: String(tunnel.ssh_host),
      SSH_PORT: String(tunnel.ssh_port),
      SSH_USER: String(tunnel.ssh_user),
      SSH_KEY_B64: String(tunnel.ssh_private_key),
      SSH_HOST_KEY: String(tunnel.ssh_host_key),
    });
    // The README's target is the sandbox's `postgres` database; here, a scratch one of the test server.
    (body.target_config as Record<string, unknown>).database = target.settings.database;
    const created = await gw.http.post('/api/pipelines/').set(t.owner.auth).send(body);
    expect(created.status).toBe(201);
    const id = created.body.id as string;

    await gw.http.post(`/api/pipelines/${id}/start`).set(t.owner.auth);
    await reachState(gw, t.owner, `/api/pipelines/${id}`, 'live', 120_000);
    // "The first query shows Ana and Ben, the second Ben (now `silver`) and Cleo."
    expect(await eventually(customers, (r) => r.length === 2)).toEqual([
      { id: 1, name: 'Ana', tier: 'gold' },
      { id: 2, name: 'Ben', tier: null },
    ]);
    await dbs.source.query(change!);
    expect(await eventually(customers, (r) => r.length === 2 && r[0]!.id === 2)).toEqual([
      { id: 2, name: 'Ben', tier: 'silver' },
      { id: 3, name: 'Cleo', tier: 'silver' },
    ]);
    // "The database passwords and the SSH key read back as <redacted>."
    const listed = await gw.http.get('/api/connectors/').set(t.owner.auth);
    const configs = (listed.body.items as { json_configuration: Record<string, unknown> }[]).map(
      (c) => c.json_configuration,
    );
    expect(configs.map((c) => [c.password, c.ssh_private_key])).toEqual([
      ['<redacted>', '<redacted>'],
      ['<redacted>', '<redacted>'],
    ]);
  }, 240_000);
});
