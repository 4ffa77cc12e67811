import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { createScratchDatabase, describeWithPostgres, type ScratchDatabase } from '@sluice/testing/postgres';

/**
 * The PostgreSQL server of scripts/with-postgres.sh is ready for the
 * PostgreSQL CDC source: wal_level=logical, a publication and a
 * `pgoutput` logical replication slot can be created, the slot decodes the
 * published table's changes, the server takes replication-protocol
 * connections, and the slot can be dropped again.
 */

/**
 * The message types of pgoutput's binary protocol, as the first byte of each
 * change: B(egin), R(elation), I(nsert), U(pdate), D(elete), C(ommit)…
 */
function messageTypes(rows: { data: Buffer }[]): string {
  return rows.map((r) => String.fromCharCode(r.data[0] ?? 0)).join('');
}

describeWithPostgres('PostgreSQL logical replication (pgoutput)', () => {
  const id = randomUUID().replace(/-/g, '').slice(0, 12);
  const slot = `sluice_test_slot_${id}`;
  const publication = `sluice_test_pub_${id}`;
  let scratch: ScratchDatabase;
  let client: pg.Client;
  let database: string;

  beforeAll(async () => {
    scratch = await createScratchDatabase('sluice_test_logical');
    client = scratch.client;
    database = scratch.settings.database;
  });

  afterAll(async () => {
    await scratch?.drop();
  });

  it('runs with wal_level=logical and room for replication slots', async () => {
    const { rows } = await client.query<{ name: string; setting: string }>(
      `select name, setting from pg_settings where name in ('wal_level', 'max_replication_slots', 'max_wal_senders')`,
    );
    const settings = Object.fromEntries(rows.map((r) => [r.name, r.setting]));
    expect(settings.wal_level).toBe('logical');
    expect(Number(settings.max_replication_slots)).toBeGreaterThanOrEqual(10);
    expect(Number(settings.max_wal_senders)).toBeGreaterThanOrEqual(10);
  });

  it('creates a publication and a pgoutput slot that decodes the published changes, then drops both', async () => {
    await client.query('create table orders (id int primary key, customer text not null, amount numeric)');
    await client.query('create table not_published (id int primary key)');
    await client.query(`create publication ${publication} for table orders`);
    const created = await client.query<{ slot_name: string; lsn: string }>(
      `select slot_name, lsn::text from pg_create_logical_replication_slot($1, 'pgoutput')`,
      [slot],
    );
    expect(created.rows[0]?.slot_name).toBe(slot);

    const listed = await client.query<{ plugin: string; slot_type: string; database: string }>(
      'select plugin, slot_type, database from pg_replication_slots where slot_name = $1',
      [slot],
    );
    expect(listed.rows).toEqual([{ plugin: 'pgoutput', slot_type: 'logical', database }]);

    // Logical decoding reads flushed WAL only; the test server commits
    // asynchronously (the WAL writer flushes within 200 ms), this session not.
    await client.query('set synchronous_commit = on');
    await client.query(`insert into orders values (1, 'ada', 10), (2, 'bob', 20)`);
    await client.query(`update orders set amount = 11 where id = 1`);
    await client.query(`delete from orders where id = 2`);
    await client.query(`insert into not_published values (1)`);

    // Peek (the slot keeps its position) at what a worker would stream.
    const changes = await client.query<{ lsn: string; data: Buffer }>(
      `select lsn::text, data from pg_logical_slot_peek_binary_changes($1, null, null,
         'proto_version', '1', 'publication_names', $2)`,
      [slot, publication],
    );
    // Three transactions on orders (the two-row insert is one), none for the
    // table outside the publication (its transaction is an empty B…C pair).
    const types = messageTypes(changes.rows);
    expect(types.replace(/BC/g, '')).toBe('BRIICBUCBDC');
    const relation = changes.rows.find((r) => r.data[0] === 'R'.charCodeAt(0));
    expect(relation?.data.includes(Buffer.from('orders\0'))).toBe(true);
    const insert = changes.rows.find((r) => r.data[0] === 'I'.charCodeAt(0));
    expect(insert?.data.includes(Buffer.from('ada'))).toBe(true);

    // The slot retains WAL until it is consumed: what the monitoring reports.
    const retained = await client.query<{ bytes: string }>(
      `select pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::text as bytes
         from pg_replication_slots where slot_name = $1`,
      [slot],
    );
    expect(Number(retained.rows[0]?.bytes)).toBeGreaterThan(0);

    await client.query('select pg_drop_replication_slot($1)', [slot]);
    await client.query(`drop publication ${publication}`);
    const after = await client.query('select 1 from pg_replication_slots where slot_name = $1', [slot]);
    expect(after.rowCount).toBe(0);
    const pubs = await client.query('select 1 from pg_publication where pubname = $1', [publication]);
    expect(pubs.rowCount).toBe(0);
  });

  it('accepts a replication-protocol connection (what a CDC worker streams through)', async () => {
    // `replication` is a startup parameter node-postgres passes on (its types omit it).
    const config: pg.ClientConfig & { replication: string } = {
      ...scratch.settings,
      ssl: false,
      replication: 'database',
    };
    const replication = new pg.Client(config);
    await replication.connect();
    try {
      const system = await replication.query<{
        systemid: string;
        timeline: string;
        xlogpos: string;
        dbname: string;
      }>('IDENTIFY_SYSTEM');
      expect(system.rows[0]?.dbname).toBe(database);
      expect(system.rows[0]?.xlogpos).toMatch(/^[0-9A-F]+\/[0-9A-F]+$/);
    } finally {
      await replication.end();
    }
  });
});
