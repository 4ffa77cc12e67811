import { sql, type Kysely } from 'kysely';
import type { CreateTableBuilder } from 'kysely';

// The mirror (architecture brief, "The mirror"): one table per custom-resource
// kind, so that lists are paginated, filtered and counted by SQL. Rows are
// written through by the gateway on its own writes and kept equal to the
// cluster by the watch-driven sync (gateway/src/mirror). `resource_version`
// orders writes: a row is only replaced by a newer version of its object.
// `deleted` rows are tombstones, kept until the sync has passed them, so that
// a late event cannot bring a deleted object back; `deleting` marks objects
// waiting for their finalizers. Frozen in time: no app imports.
/* eslint-disable @typescript-eslint/no-explicit-any */

function common<T extends string>(table: CreateTableBuilder<T, any>): CreateTableBuilder<T, any> {
  return table
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('namespace', 'text', (c) => c.notNull())
    .addColumn('team_id', 'uuid')
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('resource_version', 'bigint', (c) => c.notNull())
    .addColumn('generation', 'bigint', (c) => c.notNull())
    .addColumn('spec', 'jsonb', (c) => c.notNull())
    .addColumn('status', 'jsonb')
    .addColumn('deleting', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('deleted', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull());
}

const TABLES = [
  'mirror_connectors',
  'mirror_datamodels',
  'mirror_subscriptions',
  'mirror_pipelines',
  'mirror_warehouses',
];

export async function up(db: Kysely<any>): Promise<void> {
  await common(db.schema.createTable('mirror_connectors'))
    .addColumn('connector_type', 'text', (c) => c.notNull())
    .addColumn('direction', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('desired_state', 'text', (c) => c.notNull())
    .execute();
  await common(db.schema.createTable('mirror_datamodels'))
    .addColumn('connector_id', 'uuid', (c) => c.notNull())
    .addColumn('entry', 'text', (c) => c.notNull())
    .addColumn('enabled', 'boolean', (c) => c.notNull())
    .execute();
  await common(db.schema.createTable('mirror_subscriptions'))
    .addColumn('datamodel_id', 'uuid', (c) => c.notNull())
    .addColumn('target_connector_id', 'uuid', (c) => c.notNull())
    .addColumn('enabled', 'boolean', (c) => c.notNull())
    .execute();
  await common(db.schema.createTable('mirror_pipelines'))
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('source_connector_id', 'uuid', (c) => c.notNull())
    .addColumn('target_connector_id', 'uuid', (c) => c.notNull())
    .addColumn('datamodel_id', 'uuid', (c) => c.notNull())
    .addColumn('subscription_id', 'uuid', (c) => c.notNull())
    .execute();
  await common(db.schema.createTable('mirror_warehouses'))
    .addColumn('state', 'text', (c) => c.notNull())
    .execute();
  for (const table of TABLES) {
    await db.schema.createIndex(`${table}_team_idx`).on(table).columns(['team_id', 'name']).execute();
  }
  await db.schema
    .createIndex('mirror_datamodels_connector_idx')
    .on('mirror_datamodels')
    .column('connector_id')
    .execute();
  await db.schema
    .createIndex('mirror_subscriptions_datamodel_idx')
    .on('mirror_subscriptions')
    .column('datamodel_id')
    .execute();
  await db.schema
    .createIndex('mirror_subscriptions_target_idx')
    .on('mirror_subscriptions')
    .column('target_connector_id')
    .execute();

  // Where the sync of each kind stands: the resourceVersion to watch from.
  await db.schema
    .createTable('mirror_cursors')
    .addColumn('kind', 'text', (c) => c.primaryKey())
    .addColumn('resource_version', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('mirror_cursors').execute();
  for (const table of TABLES) await db.schema.dropTable(table).execute();
}
