import { expect, it } from '@jest/globals';
import { describeWithKafka } from '@sluice/testing/kafka';
import { eventually } from '@sluice/testing/kafka-helpers';
import { ordersPipelineFixture } from './orders-pipeline.js';

// PostgreSQL → PostgreSQL as users run it: two processes of the built worker
// program — a POSTGRES_SOURCE capturing a table by logical replication and
// publishing change events to the platform stream broker, and a
// POSTGRES_TARGET consuming them through the mapper into another database —
// on the real PostgreSQL server and the real Kafka broker. Existing rows
// arrive by the snapshot, then inserts, updates and deletes by the stream.

const MAPPER = [
  { key: 'id', path: 'id', cast: 'int', primary_key: true },
  { key: 'item', path: 'item' },
  { key: 'qty', path: 'qty', cast: 'int' },
];

describeWithKafka('PostgreSQL → Kafka → PostgreSQL (worker program)', () => {
  const f = ordersPipelineFixture('cdc', [
    'create table public.orders (id int primary key, item text not null, qty int)',
    `insert into public.orders values (1, 'apple', 3), (2, 'pear', 5)`,
  ]);

  const rows = async () =>
    (
      await f.target.client
        .query('select id::int as id, item, qty::int as qty from public.orders_copy order by id')
        .catch(() => ({ rows: [] }))
    ).rows;

  it('snapshots, then streams inserts, updates and deletes into the target table', async () => {
    const { source, target } = f;
    const src = await f.startReady(f.sourceConfig());
    const tgt = await f.startReady(f.targetConfig(MAPPER));

    // The snapshot: rows that existed before the capture started.
    await eventually(rows, (r) => r.length === 2);
    expect(await rows()).toEqual([
      { id: 1, item: 'apple', qty: 3 },
      { id: 2, item: 'pear', qty: 5 },
    ]);

    // The stream: one transaction of an insert, an update and a delete.
    await source.client.query('begin');
    await source.client.query(`insert into public.orders values (3, 'plum', 7)`);
    await source.client.query(`update public.orders set qty = 4 where id = 1`);
    await source.client.query('delete from public.orders where id = 2');
    await source.client.query('commit');
    const after = await eventually(rows, (r) => r.length === 2 && r.some((x: { id: number }) => x.id === 3));
    expect(after).toEqual([
      { id: 1, item: 'apple', qty: 4 },
      { id: 3, item: 'plum', qty: 7 },
    ]);
    // The target table was created from the mapper's casts, keyed by its primary_key rule.
    const key = await target.client.query(
      `select a.attname from pg_index i join pg_attribute a on a.attrelid = i.indrelid and a.attnum = any(i.indkey)
       where i.indrelid = 'public.orders_copy'::regclass and i.indisprimary`,
    );
    expect(key.rows.map((r: { attname: string }) => r.attname)).toEqual(['id']);
    const types = await target.client.query(
      `select column_name, data_type from information_schema.columns where table_name = 'orders_copy' order by ordinal_position`,
    );
    // `int` casts make bigint columns (a JSON number may not fit in 32 bits).
    expect(types.rows).toEqual([
      { column_name: 'id', data_type: 'bigint' },
      { column_name: 'item', data_type: 'text' },
      { column_name: 'qty', data_type: 'bigint' },
    ]);
    expect(src.output() + tgt.output()).not.toContain('apple');
  });
});
