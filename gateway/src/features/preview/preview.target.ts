import {
  castsByTable,
  ddlFor,
  describeTable,
  planBatch,
  typeConflicts,
  uniqueKeyProblem,
  type MappedMessage,
  type PostgresTargetSettings,
  type TableRef,
  withPg,
} from '@sluice/dataplane';
import type { WorkerConfig } from '@sluice/shared/catalog';
import type { OutboundPolicy } from '@sluice/shared/net';
import type { PreviewResult } from '@sluice/shared/schemas';

// The DDL a POSTGRES_TARGET worker would run for the previewed records,
// computed as its sink computes it (dataplane/src/sinks/postgres.ts):
// the records folded per table by `planBatch`, the table read from the
// catalog by `describeTable`, the statements from `ddlFor`. Only the catalog
// is read; nothing is created or altered.

type Ddl = NonNullable<PreviewResult['ddl']>;
type SinkRecord = MappedMessage['records'][number];

const message = (e: unknown) => (e instanceof Error ? e.message : String(e));

/**
 * Per table the records go to (the target table first, even with no rows:
 * whether it exists is worth knowing), what the worker would run and what
 * would make it refuse the table.
 */
export async function postgresDdl(
  config: WorkerConfig,
  records: readonly SinkRecord[],
  o: { policy: OutboundPolicy; timeoutMs: number },
): Promise<Ddl> {
  const settings = config.configuration as unknown as PostgresTargetSettings;
  const schema = settings.schema ?? 'public';
  const casts = castsByTable(config);
  const tables = [
    ...new Set([
      ...(config.subscriptions ?? []).map((s) => s.target_table_name),
      ...records.map((r) => r.table),
    ]),
  ];
  const out = await withPg(config.configuration, o, async (client) => {
    const result: Ddl['tables'] = [];
    for (const table of tables) {
      const ref: TableRef = { schema, table };
      const existing = await describeTable(client, ref);
      const entry: Ddl['tables'][number] = {
        table,
        exists: existing !== null,
        statements: [],
        type_conflicts: [],
        problems: [],
      };
      result.push(entry);
      const mine = records.filter((r) => r.table === table);
      if (mine.length === 0) continue;
      let plan;
      try {
        plan = planBatch(mine).get(table);
      } catch (e) {
        // The worker fails such a batch (rows without a value for a key column).
        entry.problems.push(message(e));
        continue;
      }
      if (!plan || plan.upserts.length === 0) continue;
      const c = casts.get(table) ?? {};
      try {
        entry.statements = ddlFor(ref, existing, plan.upserts, plan.keyColumns, c);
      } catch (e) {
        entry.problems.push(message(e));
      }
      if (existing !== null) {
        entry.type_conflicts = typeConflicts(existing, plan.upserts, plan.keyColumns, c);
        const problem = await uniqueKeyProblem(client, ref, plan.keyColumns);
        if (problem) entry.problems.push(problem);
      }
    }
    return result;
  });
  return { schema, statements: out.flatMap((t) => t.statements), tables: out };
}
