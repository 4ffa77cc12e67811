import { sql, type Kysely } from 'kysely';

// The embedded cluster: the sluice.dev custom resources stored with Kubernetes
// semantics (shared/src/cluster/embedded-cluster.ts). Frozen in time: no app
// imports, an untyped database.
/* eslint-disable @typescript-eslint/no-explicit-any */

// Byte order, as etcd sorts keys: lists come back in the same order on every
// server whatever its default collation.
const name = sql`text collate "C"`;

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('cluster_objects')
    .addColumn('kind', name, (c) => c.notNull())
    .addColumn('namespace', name, (c) => c.notNull())
    .addColumn('name', name, (c) => c.notNull())
    .addColumn('uid', 'uuid', (c) => c.notNull().unique())
    .addColumn('resource_version', 'bigint', (c) => c.notNull())
    .addColumn('generation', 'bigint', (c) => c.notNull())
    // labels, annotations, finalizers, creationTimestamp, deletionTimestamp
    .addColumn('metadata', 'jsonb', (c) => c.notNull())
    .addColumn('spec', 'jsonb', (c) => c.notNull())
    .addColumn('status', 'jsonb')
    .addPrimaryKeyConstraint('cluster_objects_pk', ['kind', 'namespace', 'name'])
    .execute();
  await sql`create index cluster_objects_labels_idx on cluster_objects using gin ((metadata -> 'labels'))`.execute(
    db,
  );

  // The watch history: one row per revision, the object as it was after it.
  await db.schema
    .createTable('cluster_events')
    .addColumn('resource_version', 'bigint', (c) => c.primaryKey())
    .addColumn('kind', name, (c) => c.notNull())
    .addColumn('namespace', name, (c) => c.notNull())
    .addColumn('name', name, (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('object', 'jsonb', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createIndex('cluster_events_kind_idx')
    .on('cluster_events')
    .columns(['kind', 'resource_version'])
    .execute();
  await db.schema
    .createIndex('cluster_events_created_idx')
    .on('cluster_events')
    .column('created_at')
    .execute();

  // Two counters, one row each so that writers (who lock `revision`) and the
  // compactor (who moves `horizon`) never wait on each other:
  // - revision: the cluster-wide resourceVersion, allocated under the row lock;
  // - horizon: events at or below it were compacted away.
  await db.schema
    .createTable('cluster_meta')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('value', 'bigint', (c) => c.notNull())
    .execute();
  await db
    .insertInto('cluster_meta')
    .values([
      { key: 'revision', value: 0 },
      { key: 'horizon', value: 0 },
    ])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('cluster_meta').execute();
  await db.schema.dropTable('cluster_events').execute();
  await db.schema.dropTable('cluster_objects').execute();
}
