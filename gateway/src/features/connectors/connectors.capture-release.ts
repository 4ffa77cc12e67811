import {
  deletePositionTopic,
  describeKafkaFailure,
  dropPostgresCdc,
  platformStream,
  positionTopic,
  type PostgresSourceSettings,
} from '@sluice/dataplane';
import {
  CAPTURE_DROPPED,
  CAPTURE_RELEASED_ANNOTATION,
  type ConnectorResource,
  type ConnectorSpec,
} from '@sluice/shared/catalog';
import { connectorType } from '@sluice/shared/connectors';
import { NotFoundError, type ClusterObject } from '@sluice/shared/ports';
import type { GatewayContext } from '../../context.js';
import { outboundPolicy } from '../../connections/outbound.js';
import { resolvedStoredConfiguration } from '../../connections/stored-configuration.js';

// A PostgreSQL source holds a replication slot on the user's database, and a
// slot nobody reads makes the server keep WAL for ever (its disk fills up).
// Deleting the connector therefore drops the slot and the publication Sluice
// created — the gateway does it, as it holds the secrets to connect — and
// records the outcome on the connector (CAPTURE_RELEASED_ANNOTATION), which
// the operator's finalizer waits for before the managed Secret and the
// connector go. Two ways in:
// - a delete through the API resolves the configuration first, deletes, then
//   drops (the operator stops the worker; the drop waits up to 10 s for the
//   slot to be released);
// - a delete with kubectl reaches the gateway through the mirror
//   (`releaseOnDeletion`), while the finalizer holds the connector and its
//   Secret.
// A source that cannot be reached does not block the delete: the outcome
// says why, and the operator's Warning event names the slot for a person to
// drop (docs/data-plane-postgres.md, "Deleting a source"). A MySQL or
// MariaDB source's release deletes its position topic on the platform broker
// the same two ways (no secret needed; docs/data-plane-mysql.md).

/** Drops the capture; resolves to `dropped` or the sentence saying why not. Undefined: nothing to drop. */
export type CaptureRelease = () => Promise<string | undefined>;

/**
 * Connectors whose release runs in this process (an API delete also comes
 * back through the mirror). Keyed by the database handle: the app and the
 * mirror hold different copies of the context, and share their handle.
 */
const inFlight = new WeakMap<GatewayContext['db'], Set<string>>();
const running = (ctx: GatewayContext) => {
  let set = inFlight.get(ctx.db);
  if (!set) inFlight.set(ctx.db, (set = new Set()));
  return set;
};

const sentence = (e: unknown) => (e instanceof Error ? e.message : String(e));

/** Sources whose position is a topic of the platform broker. */
export const POSITION_TOPIC_TYPES: ReadonlySet<string> = new Set(['MYSQL_SOURCE', 'MARIADB_SOURCE']);

/** What a capture release reads: the catalog, the secrets, the service database, the outbound settings. */
export type CaptureReleaseContext = Pick<GatewayContext, 'config' | 'db' | 'log' | 'secretStore' | 'catalog'>;

/** Prepares the release of a connector's capture (its settings resolved now); a no-op for other types. */
export async function prepareCaptureRelease(
  ctx: CaptureReleaseContext,
  row: { id: string; connector_type: string; spec: unknown },
): Promise<CaptureRelease> {
  const def = connectorType(row.connector_type);
  if (def && POSITION_TOPIC_TYPES.has(def.type)) {
    return async () => {
      let brokers = '';
      try {
        const platform = platformStream();
        brokers = platform.brokers.join(',');
        await deletePositionTopic(platform, row.id);
        return CAPTURE_DROPPED;
      } catch (e) {
        // Unset SLUICE_STREAM_BROKERS says so itself; a broker's failure is said as the broker's.
        const why = brokers ? describeKafkaFailure(e, brokers) : sentence(e);
        ctx.log.warn(
          { connector: row.id, err: why },
          `could not delete the position topic ${positionTopic(row.id)} of a deleted source: delete it on the platform broker`,
        );
        return why;
      }
    };
  }
  if (!def || def.type !== 'POSTGRES_SOURCE') return async () => undefined;
  let settings: PostgresSourceSettings;
  try {
    const config = (row.spec as ConnectorSpec).configuration;
    settings = (await resolvedStoredConfiguration(
      ctx,
      def,
      row.id,
      config,
    )) as unknown as PostgresSourceSettings;
  } catch (e) {
    return async () => warn(ctx, row.id, e);
  }
  return async () => {
    try {
      await dropPostgresCdc(settings, { connectorId: row.id, policy: outboundPolicy(ctx) });
      return CAPTURE_DROPPED;
    } catch (e) {
      return warn(ctx, row.id, e);
    }
  };
}

/** Records the outcome on the connector being deleted; it may be gone already. */
export async function recordCaptureRelease(
  ctx: GatewayContext,
  namespace: string,
  id: string,
  outcome: string,
): Promise<void> {
  try {
    await ctx.cluster.patch('Connector', namespace, id, {
      metadata: { annotations: { [CAPTURE_RELEASED_ANNOTATION]: outcome.slice(0, 500) } },
    });
  } catch (e) {
    if (!(e instanceof NotFoundError)) throw e;
  }
}

/**
 * The API's delete: resolves now (the Secret goes with the connector), and
 * returns what finishes the release once the connector is deleted.
 */
export async function releaseForDelete(
  ctx: GatewayContext,
  row: { id: string; connector_type: string; spec: unknown },
): Promise<() => Promise<void>> {
  const namespace = await ctx.catalog.namespaceOf('Connector', row.id);
  const release = await prepareCaptureRelease(ctx, row);
  running(ctx).add(row.id);
  return async () => {
    try {
      const outcome = await release();
      if (outcome !== undefined) await recordCaptureRelease(ctx, namespace, row.id, outcome);
    } finally {
      running(ctx).delete(row.id);
    }
  };
}

/** Tries after the drop failed, spaced so a worker still stopping can release its slot. */
const ATTEMPTS = 3;
const RETRY_MS = 5000;

/**
 * The mirror saw a connector being deleted (kubectl, Argo CD): drop a
 * PostgreSQL source's capture unless its outcome is recorded or this process
 * is already at it. Every gateway replica may try; a failure is recorded only
 * when no outcome is there yet, so a replica's success is not overwritten.
 */
export function releaseOnDeletion(ctx: GatewayContext, object: ClusterObject): void {
  if (object.kind !== 'Connector') return;
  const c = object as ConnectorResource;
  const { name: id, namespace } = c.metadata;
  const type = connectorType(c.spec.connectorType)?.type;
  if (type !== 'POSTGRES_SOURCE' && !POSITION_TOPIC_TYPES.has(type ?? '')) return;
  if (c.metadata.annotations?.[CAPTURE_RELEASED_ANNOTATION] !== undefined || running(ctx).has(id)) return;
  running(ctx).add(id);
  void (async () => {
    try {
      const release = await prepareCaptureRelease(ctx, {
        id,
        connector_type: c.spec.connectorType,
        spec: c.spec,
      });
      let outcome: string | undefined;
      for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
        outcome = await release();
        if (outcome === CAPTURE_DROPPED || attempt === ATTEMPTS) break;
        await new Promise((r) => setTimeout(r, RETRY_MS));
      }
      if (outcome === undefined) return;
      if (outcome !== CAPTURE_DROPPED) {
        const now = await ctx.cluster.get<ConnectorResource>('Connector', namespace, id);
        if (!now || now.metadata.annotations?.[CAPTURE_RELEASED_ANNOTATION] !== undefined) return;
      }
      await recordCaptureRelease(ctx, namespace, id, outcome);
    } catch (e) {
      ctx.log.warn(
        { connector: id, err: sentence(e) },
        'releasing the capture of a deleted connector failed',
      );
    } finally {
      running(ctx).delete(id);
    }
  })();
}

function warn(ctx: Pick<GatewayContext, 'log'>, connector: string, e: unknown): string {
  ctx.log.warn(
    { connector, err: sentence(e) },
    'could not drop the replication slot of a deleted PostgreSQL source: drop it on the source (pg_drop_replication_slot)',
  );
  return sentence(e);
}
