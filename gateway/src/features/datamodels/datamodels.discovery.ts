import { type ConnectorSpec, type DataModelStatus } from '@sluice/shared/catalog';
import { connectorType } from '@sluice/shared/connectors';
import type { GatewayContext } from '../../context.js';
import { findSourceConnector } from '../monitoring/monitoring.repository.js';
import { fetchKafkaMessages, fetchMysqlSchema, fetchPostgresSchema } from '@sluice/dataplane';
import { CONNECTION_TIMEOUT_MS, outboundPolicy } from '../../connections/outbound.js';
import { resolvedStoredConfiguration } from '../../connections/stored-configuration.js';
import { inferFields } from './datamodels.inference.js';

// The schema of a data model, discovered by the gateway when it is asked
// for (GET /datamodels/{id}/schema): a PostgreSQL, MySQL or MariaDB source's
// table from the source's catalog, a Kafka source's topic inferred from its recent JSON
// messages — the pre-flight checks' connections, under the same address
// policy and deadline. The result is kept in the DataModel's status.schema
// (so kubectl shows it too) and read again after SCHEMA_REFRESH_MS.

export type DiscoveredSchema = NonNullable<DataModelStatus['schema']>;

/** A recorded schema younger than this is answered without asking the source. */
export const SCHEMA_REFRESH_MS = 60_000;
const DISCOVERING = ['POSTGRES_SOURCE', 'MYSQL_SOURCE', 'MARIADB_SOURCE', 'KAFKA_SOURCE'];
/** Messages the inference reads at most. */
const SAMPLE = 50;

export async function discoveredSchema(
  ctx: GatewayContext,
  dm: { id: string; connector_id: string; entry: string; status: unknown },
): Promise<DiscoveredSchema | undefined> {
  const recorded = (dm.status as DataModelStatus | null)?.schema;
  if (recorded && Date.now() - Date.parse(recorded.discoveredAt) < SCHEMA_REFRESH_MS) return recorded;
  const source = await findSourceConnector(ctx.db, dm.connector_id);
  const def = source && connectorType(source.connector_type);
  if (!source || !def || !DISCOVERING.includes(def.type)) return recorded;
  try {
    const config = await resolvedStoredConfiguration(
      ctx,
      def,
      source.id,
      (source.spec as ConnectorSpec).configuration,
    );
    const o = { policy: outboundPolicy(ctx), timeoutMs: CONNECTION_TIMEOUT_MS };
    let next: DiscoveredSchema | undefined;
    const discoveredAt = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
    if (def.type !== 'KAFKA_SOURCE') {
      const [table] =
        def.type === 'POSTGRES_SOURCE'
          ? await fetchPostgresSchema(config, [dm.entry], o)
          : await fetchMysqlSchema(
              def.type === 'MARIADB_SOURCE' ? 'MariaDB' : 'MySQL',
              config,
              [dm.entry],
              o,
            );
      if (table?.exists) {
        const fields = table.columns.map((c) => ({ name: c.name, type: c.type, nullable: c.nullable }));
        next = { fields, discoveredAt, origin: 'catalog' };
      }
    } else {
      const messages = await fetchKafkaMessages(config, dm.entry, { ...o, limit: SAMPLE });
      const fields = inferFields(messages.map((m) => m.value));
      if (fields.length) next = { fields, discoveredAt, origin: 'messages' };
    }
    if (!next) return recorded;
    await ctx.catalog.patchStatus('DataModel', dm.id, { schema: next });
    return next;
  } catch (e) {
    // Unreachable, or the table or topic is gone: the last schema known stays.
    ctx.log.warn(
      { datamodel: dm.id, err: e instanceof Error ? e.message : String(e) },
      'could not discover the schema of a data model from its source',
    );
    return recorded;
  }
}
