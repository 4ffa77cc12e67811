import { randomUUID } from 'node:crypto';
import mysql from 'mysql2/promise';
import { createScratchDatabase, testPostgresUrl, type ScratchDatabase } from '@sluice/testing/postgres';
import { assertWorkerBuilt } from '@sluice/testing/kafka-helpers';
import { startBastion, type Bastion } from '@sluice/testing/sshd';

// What the MariaDB → PostgreSQL tests through an SSH bastion start: a real
// OpenSSH bastion (testing/src/sshd.ts), a scratch database on the test
// MariaDB server (scripts/with-mariadb.sh) with a connection to it, and a
// scratch database on the test PostgreSQL server, both servers on 127.0.0.1
// and so "behind" the bastion. Needs the built worker program.

export interface TunnelledDatabases {
  bastion: Bastion;
  /** The test MariaDB server (SLUICE_TEST_MYSQL_URL). */
  mariadb: URL;
  /** The scratch MariaDB database, and a connection using it (several statements a query allowed). */
  database: string;
  source: mysql.Connection;
  target: ScratchDatabase;
  close(): Promise<void>;
}

export async function startTunnelledDatabases(prefix: string): Promise<TunnelledDatabases> {
  assertWorkerBuilt();
  if (!testPostgresUrl()) throw new Error('needs SLUICE_TEST_DATABASE_URL (scripts/with-postgres.sh)');
  if (!process.env.SLUICE_TEST_MYSQL_URL)
    throw new Error('needs SLUICE_TEST_MYSQL_URL (scripts/with-mariadb.sh)');
  const mariadb = new URL(process.env.SLUICE_TEST_MYSQL_URL);
  const database = `${prefix}_${randomUUID().slice(0, 8)}`;
  const bastion = await startBastion();
  let source: mysql.Connection | undefined;
  let target: ScratchDatabase | undefined;
  const close = async () => {
    await source?.query(`drop database if exists \`${database}\``).catch(() => undefined);
    await source?.end();
    await target?.drop();
    await bastion.close();
  };
  try {
    source = await mysql.createConnection({
      host: mariadb.hostname,
      port: Number(mariadb.port),
      user: decodeURIComponent(mariadb.username),
      password: decodeURIComponent(mariadb.password),
      multipleStatements: true,
    });
    await source.query(`create database \`${database}\``);
    await source.query(`use \`${database}\``);
    target = await createScratchDatabase(`${prefix}_tgt`);
  } catch (e) {
    await close();
    throw e;
  }
  return { bastion, mariadb, database, source, target, close };
}
