import type { WorkerConfig } from '@sluice/shared/catalog';
import type { CastType } from '@sluice/shared/mapper';
import type { OutboundPolicy } from '@sluice/shared/net';
import type { Sink } from '../contracts.js';
import type { Engine } from '../engine.js';
import { workerOutboundPolicy } from '../outbound.js';
import { targetEngine } from '../target/target-loop.js';
import { createPostgresSink, type PostgresTargetSettings } from './postgres.js';
import { createWebhookSink, type WebhookTargetSettings } from './webhook.js';

// The target engines whose sinks are not brokers: the shared target loop
// (consume, map, batch, write, then commit) with the PostgreSQL or webhook
// sink. The configuration arrives with its secrets already resolved.

/** Per target table, the mapper's casts of its columns: they type the columns the sink creates. */
export function castsByTable(config: WorkerConfig): Map<string, Record<string, CastType>> {
  const byTable = new Map<string, Record<string, CastType>>();
  for (const s of config.subscriptions ?? []) {
    const casts = byTable.get(s.target_table_name) ?? {};
    for (const rule of s.mapper_config as { key?: unknown; cast?: unknown }[]) {
      if (typeof rule?.key === 'string' && typeof rule.cast === 'string')
        casts[rule.key] = rule.cast as CastType;
    }
    byTable.set(s.target_table_name, casts);
  }
  return byTable;
}

/** Where a Sink may connect: the worker's policy, or the gateway's for a backfill run there. */
export interface SinkOpenOptions {
  policy: OutboundPolicy;
}

export async function openPostgresSink(config: WorkerConfig, o: SinkOpenOptions): Promise<Sink> {
  const casts = castsByTable(config);
  return createPostgresSink(config.configuration as unknown as PostgresTargetSettings, {
    castsFor: (table) => casts.get(table),
    policy: o.policy,
    applicationName: `sluice-${config.connector_id}`.slice(0, 63),
  });
}

export async function openWebhookSink(config: WorkerConfig, o: SinkOpenOptions): Promise<Sink> {
  return createWebhookSink(config.configuration as unknown as WebhookTargetSettings, {
    policy: o.policy,
    // The schema admits http:// URLs (in-cluster receivers); the address policy still applies.
    allowHttp: true,
  });
}

export const postgresTargetEngine: Engine = targetEngine((config) =>
  openPostgresSink(config, { policy: workerOutboundPolicy() }),
);

export const webhookTargetEngine: Engine = targetEngine((config) =>
  openWebhookSink(config, { policy: workerOutboundPolicy() }),
);
