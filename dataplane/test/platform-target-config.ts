import type { WorkerConfig } from '@sluice/shared/catalog';

// The configuration of a target worker of run `run` with one subscription
// reading a database source's change stream (`topic` on the platform broker)
// into `table` through `mapper`, from the stream's beginning: what the
// pipeline tests of database sources give their target worker.

export function platformTargetConfig(
  run: string,
  s: {
    connectorType: string;
    configuration: Record<string, unknown>;
    datamodelId: string;
    topic: string;
    table: string;
    mapper: readonly Record<string, unknown>[];
  },
): WorkerConfig {
  return {
    connector_id: `tgt_${run}`,
    connector_type: s.connectorType,
    role: 'target',
    configuration: s.configuration,
    subscriptions: [
      {
        id: `sub-${run}`,
        datamodel_id: s.datamodelId,
        topic: s.topic,
        target_table_name: s.table,
        mapper_config: s.mapper,
        consumer_id: `sub-${run}`,
        enabled: true,
        backfill: true,
        error_table: { enabled: false },
        stream: { kind: 'platform' },
      },
    ],
  } as unknown as WorkerConfig;
}
