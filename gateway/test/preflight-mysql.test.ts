import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import mysql from 'mysql2/promise';
import { createConnector, setupTeam, type TeamSetup } from './catalog-fixtures.js';
import type { TestGateway } from './harness.js';
import { closeChecked, closedPort, poster, startPreflightGateway } from './preflight-fixtures.js';

// Pre-flight checks of MYSQL_SOURCE and MARIADB_SOURCE (spec 4.5) against the
// real MariaDB server of scripts/with-mariadb.sh (binary log on, ROW format):
// a user of the test's own with a password and only the grants capture
// needs, another without the replication grants.

const url = process.env.SLUICE_TEST_MYSQL_URL;
const describeWithMysql = (name: string, fn: () => void) => {
  if (url) describe(name, fn);
  else if (process.env.CI || process.env.SLUICE_REQUIRE_MYSQL === '1') {
    describe(name, () => {
      it('needs a MySQL/MariaDB server', () => {
        throw new Error('SLUICE_TEST_MYSQL_URL is not set: run the tests under scripts/with-mariadb.sh');
      });
    });
  } else {
    console.warn(`${name}: skipped, no server; run under scripts/with-mariadb.sh`);
    describe.skip(`${name} (skipped: no MySQL/MariaDB server; run under scripts/with-mariadb.sh)`, fn);
  }
};

const run = randomUUID().slice(0, 8);
const PASSWORD = `my-preflight-s3cret-${run}`;
const WRONG = `wrong-s3cret-${run}`;

describeWithMysql('pre-flight checks of MySQL and MariaDB sources (real MariaDB server)', () => {
  const db = `pf_${run}`;
  const capture = `pf_cdc_${run}`;
  const reader = `pf_ro_${run}`;
  let admin: mysql.Connection;
  let gw: TestGateway;
  let t: TeamSetup;
  let host: string;
  let port: number;

  beforeAll(async () => {
    const u = new URL(url as string);
    host = u.hostname;
    port = Number(u.port);
    admin = await mysql.createConnection({
      host,
      port,
      user: decodeURIComponent(u.username),
      password: decodeURIComponent(u.password),
      multipleStatements: true,
    });
    await admin.query(`create database ${db}`);
    await admin.query(
      `create table ${db}.orders (id bigint primary key, status varchar(20) not null, total decimal(10,2))`,
    );
    await admin.query(`create table ${db}.notes (body text)`);
    for (const user of [capture, reader]) {
      await admin.query(`create user '${user}'@'127.0.0.1' identified by '${PASSWORD}'`);
      await admin.query(`grant select on ${db}.* to '${user}'@'127.0.0.1'`);
    }
    await admin.query(`grant replication slave, replication client on *.* to '${capture}'@'127.0.0.1'`);
    gw = await startPreflightGateway();
    t = await setupTeam(gw, 'preflight-mysql');
  });
  afterAll(async () => {
    await admin?.query(`drop database if exists ${db}`);
    for (const user of [capture, reader]) await admin?.query(`drop user if exists '${user}'@'127.0.0.1'`);
    await admin?.end();
    if (gw) await closeChecked(gw, [PASSWORD, WRONG]);
  });

  const post = poster(
    () => gw,
    () => t,
  );
  const cfg = (user = capture, password = PASSWORD) => ({ host, port, user, password, ssl_mode: 'disabled' });

  it('logs in to MariaDB and MySQL sources; a wrong password and missing replication grants are reported', async () => {
    const maria = await post('mariadb-source/check-credentials', cfg());
    expect(maria.status).toBe(200);
    expect(maria.body).toMatchObject({
      ok: true,
      message: expect.stringMatching(/^Logged in to MariaDB 1\d\./),
    });
    const my = await post('mysql-source/check-credentials', { ...cfg(), ssl_mode: 'preferred' });
    expect(my.body).toMatchObject({ ok: true, message: expect.stringMatching(/^Logged in to MySQL /) });

    const bad = await post('mariadb-source/check-credentials', cfg(capture, WRONG));
    expect(bad.body).toEqual({
      ok: false,
      message: `MariaDB at ${host}:${port} refused the login: check the user name and password (ER_ACCESS_DENIED_ERROR)`,
    });
    const noGrants = await post('mariadb-source/check-credentials', cfg(reader));
    expect(noGrants.body.ok).toBe(false);
    expect(noGrants.body.message).toMatch(/but: The user lacks REPLICATION SLAVE and REPLICATION CLIENT/);
    expect(noGrants.body.details.warnings).toHaveLength(1); // binlog on, ROW, FULL: nothing else lacking
  });

  it('fails fast on a closed port, denies the metadata address, and reads the SSH key before any tunnel', async () => {
    const started = Date.now();
    const closed = await post('mysql-source/check-credentials', { ...cfg(), port: await closedPort() });
    expect(closed.body).toEqual({ ok: false, message: expect.stringMatching(/^Connection refused by/) });
    expect(Date.now() - started).toBeLessThan(5_000);
    const denied = await post('mysql-source/check-credentials', { ...cfg(), host: '169.254.169.254' });
    expect(denied.body).toEqual({
      ok: false,
      message: expect.stringMatching(/169\.254\.169\.254 are not allowed/),
    });
    const ssh = await post('mysql-source/check-credentials', {
      ...cfg(),
      ssh_host: 'bastion.example.com',
      ssh_user: 'tunnel',
      ssh_private_key: Buffer.from(
        '-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----\n',
      ).toString('base64'),
    });
    // Never a pretend success, nor a direct connection: the tunnel's key is unreadable.
    expect(ssh.body).toEqual({
      ok: false,
      message: expect.stringMatching(/^The SSH private key \(ssh_private_key\) could not be read/),
    });
  });

  it('lists the tables the user can see with their primary keys, and fetches their columns', async () => {
    const tables = await post('mariadb-source/list-tables', cfg());
    expect(tables.status).toBe(200);
    expect(tables.body.tables).toEqual([
      { name: `${db}.notes`, schema: db, table: 'notes', primary_key: [] },
      { name: `${db}.orders`, schema: db, table: 'orders', primary_key: ['id'] },
    ]);
    const schema = await post('mariadb-source/fetch-schema', {
      ...cfg(),
      tables: [`${db}.orders`, `${db}.gone`],
    });
    expect(schema.status).toBe(200);
    expect(schema.body.tables).toEqual([
      {
        name: `${db}.orders`,
        exists: true,
        columns: [
          { name: 'id', type: expect.stringMatching(/^bigint/), nullable: false, primary_key: true },
          { name: 'status', type: 'varchar(20)', nullable: false, primary_key: false },
          { name: 'total', type: 'decimal(10,2)', nullable: true, primary_key: false },
        ],
      },
      { name: `${db}.gone`, exists: false, columns: [] },
    ]);
    const unqualified = await post('mariadb-source/fetch-schema', { ...cfg(), tables: ['orders'] });
    expect(unqualified.status).toBe(400);
    expect(unqualified.body.detail).toMatch(/names no database/);
    const wrong = await post('mariadb-source/list-tables', cfg(capture, WRONG));
    expect(wrong.status).toBe(400);
    expect(wrong.body.detail).toMatch(/refused the login/);
  });

  it('uses the stored password and capture list with ?connector_id=', async () => {
    const c = await createConnector(gw, t.owner, t.teamId, `maria-${run}`, 'MARIADB_SOURCE', {
      ...cfg(),
      whitelist: [`${db}.orders`],
    });
    const res = await post(`mariadb-source/fetch-schema?connector_id=${c.id}`, {}, t.member.auth);
    expect(res.status).toBe(200);
    expect(res.body.tables).toEqual([expect.objectContaining({ name: `${db}.orders`, exists: true })]);
    const check = await post(`mariadb-source/check-credentials?connector_id=${c.id}`, {
      ...cfg(),
      password: '<redacted>',
    });
    expect(check.body.ok).toBe(true);
    const outsider = await post(`mariadb-source/check-credentials?connector_id=${c.id}`, {}, t.outsider.auth);
    expect(outsider.status).toBe(403);
  });
});
