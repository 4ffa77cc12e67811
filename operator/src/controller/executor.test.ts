import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { PGlite } from '@electric-sql/pglite';
import { Kysely, PGliteDialect } from 'kysely';
import { Migrator } from 'kysely/migration';
import { EMBEDDED_CLUSTER_MIGRATIONS, EmbeddedCluster } from '@sluice/shared/cluster';
import type { ClusterObject, SluiceKind, WorkerRuntimePort } from '@sluice/shared/ports';
import type { Action } from '../reconcile/actions.js';
import { LogEventRecorder } from './events.js';
import { execute } from './executor.js';
import { silentLogger } from './logger.js';

// The executor on the embedded cluster (PGlite in memory): a delete guarded
// by `ifGone` reads the cluster, not a cache, so a data model whose owner the
// operator's cache has not seen yet is kept.

describe('execute: a delete guarded by ifGone', () => {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the adapter takes any database that has its tables
  let db: Kysely<any>;
  let cluster: EmbeddedCluster;
  beforeAll(async () => {
    db = new Kysely({ dialect: new PGliteDialect({ pglite: await PGlite.create() }) });
    const migrator = new Migrator({
      db,
      provider: { getMigrations: async () => ({ ...EMBEDDED_CLUSTER_MIGRATIONS }) },
    });
    const { error } = await migrator.migrateToLatest();
    if (error) throw error;
    cluster = new EmbeddedCluster(db);
  });
  afterAll(() => db.destroy());

  const object = (kind: SluiceKind, name: string): ClusterObject => ({
    apiVersion: 'sluice.dev/v1alpha1',
    kind,
    metadata: { name, namespace: 'ns' },
    spec: { name },
  });
  // A plan of deletes only: the runtime is never called.
  const run = (actions: Action[]) =>
    execute(actions, {
      cluster,
      runtime: {} as WorkerRuntimePort,
      events: new LogEventRecorder(silentLogger),
    });

  it('deletes only once the object it names is gone from the cluster', async () => {
    await cluster.create(object('Connector', 'c1'));
    await cluster.create(object('DataModel', 'd1'));
    const plan: Action[] = [
      {
        type: 'delete',
        ref: { kind: 'DataModel', namespace: 'ns', name: 'd1' },
        ifGone: { kind: 'Connector', namespace: 'ns', name: 'c1' },
      },
    ];
    await run(plan);
    expect(await cluster.get('DataModel', 'ns', 'd1')).toBeDefined();

    await cluster.delete('Connector', 'ns', 'c1');
    await run(plan);
    expect(await cluster.get('DataModel', 'ns', 'd1')).toBeUndefined();
    // Gone already: not an error.
    await run(plan);
  });
});
