import { randomUUID } from 'node:crypto';
import { Admin } from '@platformatic/kafka';
import mysql from 'mysql2/promise';
import type { WorkerConfig } from '@sluice/shared/catalog';
import { assertWorkerBuilt, readTopic } from '@sluice/testing/kafka-helpers';
import type { NumberedRow } from './numbered-rows.js';

// What the MariaDB source's tests share: a scratch database on the test
// server (SLUICE_TEST_MYSQL_URL, scripts/with-mariadb.sh) holding the
// numbered table of numbered-rows.ts in MariaDB's types (its JSON is the
// LONGTEXT alias), the topic on the test broker, the worker's configuration,
// one transaction of inserts, updates and deletes, and the position the
// worker recorded (its checkpoint topic).

export function testMysqlUrl(): URL {
  const url = process.env.SLUICE_TEST_MYSQL_URL;
  if (!url) throw new Error('needs SLUICE_TEST_MYSQL_URL (scripts/with-mariadb.sh)');
  return new URL(url);
}

/** Connection settings of a MARIADB_SOURCE for `database` on the test server (or the server of `url`). */
export function mariadbSettings(database: string, url?: URL): Record<string, unknown> {
  const u = url ?? testMysqlUrl();
  return {
    host: u.hostname,
    port: Number(u.port || 3306),
    user: decodeURIComponent(u.username),
    password: decodeURIComponent(u.password),
    database,
    ssl_mode: 'disabled',
  };
}

export async function mariadbConnection(database?: string, url?: URL): Promise<mysql.Connection> {
  const s = mariadbSettings(database ?? '', url);
  return mysql.createConnection({
    host: s.host as string,
    port: s.port as number,
    user: s.user as string,
    password: s.password as string,
    ...(database ? { database } : {}),
    multipleStatements: false,
    supportBigNumbers: true,
    bigNumberStrings: true,
  });
}

export const CREATE_NUMBERED = `create table numbered (
  id int primary key, version int not null, label text character set utf8mb4 not null,
  amount decimal(12,2) not null, doc json not null)`;

export interface MariadbSource {
  database: string;
  conn: mysql.Connection;
  admin: Admin;
  close(): Promise<void>;
}

/**
 * A scratch database named from `prefix` with the numbered table, and
 * `topic` with `partitions`; on the test server, or the server of `url`.
 */
export async function mariadbSource(
  prefix: string,
  brokers: string[],
  topic: string,
  partitions: number,
  url?: URL,
): Promise<MariadbSource> {
  assertWorkerBuilt();
  const database = `${prefix}_${randomUUID().slice(0, 8)}`;
  const conn = await mariadbConnection(undefined, url);
  const admin = new Admin({ clientId: 'sluice-test-admin', bootstrapBrokers: brokers });
  const close = async () => {
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin.close();
    await conn.query(`drop database if exists \`${database}\``).catch(() => undefined);
    await conn.end();
  };
  try {
    await conn.query(`create database \`${database}\``);
    await conn.query(`use \`${database}\``);
    await conn.query(CREATE_NUMBERED);
    await admin.createTopics({ topics: [topic], partitions, replicas: 1 });
  } catch (e) {
    await close();
    throw e;
  }
  return { database, conn, admin, close };
}

/** The configuration of a MARIADB_SOURCE worker capturing `database`.numbered (on the server of `url`) into `topic`. */
export function mariadbSourceConfig(
  connectorId: string,
  database: string,
  topic: string,
  url?: URL,
): WorkerConfig {
  const entry = `${database}.numbered`;
  return {
    connector_id: connectorId,
    connector_type: 'MARIADB_SOURCE',
    role: 'source',
    configuration: { ...mariadbSettings(database, url), whitelist: [entry] },
    datamodels: [{ id: `dm-${connectorId}`, name: 'numbered', entry, enabled: true, topic }],
  };
}

/** One transaction's inserts, updates (to the rows' given versions) and deletes; returns its GTID (`0-1-N`). */
export async function writeMariadbTransaction(
  conn: mysql.Connection,
  change: { inserts?: NumberedRow[]; updates?: NumberedRow[]; deletes?: number[] },
): Promise<string> {
  const values = (rows: NumberedRow[]) =>
    rows.map((r) => [r.id, r.version, r.label, r.amount, JSON.stringify(r.doc)]);
  await conn.query('begin');
  try {
    if (change.inserts?.length) {
      await conn.query('insert into numbered (id, version, label, amount, doc) values ?', [
        values(change.inserts),
      ]);
    }
    if (change.updates?.length) {
      // Every row exists: each is logged as an update (before and after images).
      await conn.query(
        `insert into numbered (id, version, label, amount, doc) values ?
           on duplicate key update version = values(version), label = values(label),
             amount = values(amount), doc = values(doc)`,
        [values(change.updates)],
      );
    }
    if (change.deletes?.length) await conn.query('delete from numbered where id in (?)', [change.deletes]);
    await conn.query('commit');
  } catch (error) {
    await conn.query('rollback').catch(() => undefined);
    throw error;
  }
  const [rows] = await conn.query('select @@last_gtid as gtid');
  return String((rows as { gtid: string }[])[0]?.gtid);
}

/** The sequence number of `gtid` (`domain-server-sequence`) in domain 0. */
export const gtidSequence = (gtid: string): number => {
  const part = gtid.split(',').find((p) => p.startsWith('0-')) ?? '0-0-0';
  return Number(part.split('-')[2]);
};

/** The next offset of each partition of `topic`. */
export async function partitionEnds(admin: Admin, topic: string): Promise<bigint[]> {
  const meta = await admin.metadata({ topics: [topic] });
  const partitions = meta.topics.get(topic)?.partitionsCount ?? 0;
  const listed = await admin.listOffsets({
    topics: [
      {
        name: topic,
        partitions: Array.from({ length: partitions }, (_, i) => ({ partitionIndex: i, timestamp: -1n })),
      },
    ],
  });
  const ends = Array.from({ length: partitions }, () => 0n);
  for (const p of listed[0]?.partitions ?? []) ends[p.partitionIndex] = p.offset;
  return ends;
}

/** The newest position the worker recorded (its checkpoint topic), or undefined before the first. */
export async function recordedPosition(
  brokers: string[],
  admin: Admin,
  connectorId: string,
): Promise<{ file: string; offset: number; gtid: string } | undefined> {
  const messages = await readTopic(brokers, admin, `sluice-position.${connectorId}`);
  const last = messages.at(-1);
  return last ? (JSON.parse(last.value) as { file: string; offset: number; gtid: string }) : undefined;
}

/** Waits until the worker recorded a position at or past `gtid`; fails fast when `failFast` says why. */
export async function untilRecorded(
  brokers: string[],
  admin: Admin,
  connectorId: string,
  gtid: string,
  failFast: () => string | undefined,
  ms = 120_000,
): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    const p = await recordedPosition(brokers, admin, connectorId).catch(() => undefined);
    if (p && gtidSequence(p.gtid) >= gtidSequence(gtid)) return;
    const failure = failFast();
    if (failure) throw new Error(failure);
    if (Date.now() > deadline) throw new Error(`recorded ${JSON.stringify(p)}, not ${gtid}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
