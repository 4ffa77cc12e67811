import { mapMessage, prepareSubscription, SystemFailure, type PreparedSubscription } from '@sluice/dataplane';
import {
  sourceWorkerConfig,
  targetWorkerConfig,
  writesTables,
  type WorkerConfig,
} from '@sluice/shared/catalog';
import { PREVIEW_DEFAULT_LIMIT, type PreviewRequest, type PreviewResult } from '@sluice/shared/schemas';
import { MissingSecretError } from '@sluice/shared/secrets';
import type { Principal } from '../../auth/principal.js';
import type { GatewayContext } from '../../context.js';
import { conflict, HttpError, notFound, unprocessable } from '../../http/errors.js';
import { CONNECTION_TIMEOUT_MS, outboundPolicy } from '../../connections/outbound.js';
import { resolvedWorkerConfig } from '../../connections/worker-configuration.js';
import { MissingObjectError, subscriptionObjects } from '../connectors/connectors.worker-config.js';
import { loadPipeline } from '../pipelines/pipelines.service.js';
import { loadSubscription } from '../subscriptions/subscriptions.service.js';
import { fetchedMessages, givenMessages, type PreviewMessages } from './preview.source.js';
import { postgresDdl } from './preview.target.js';

// Preview before going live (docs/data-plane.md "Preview"): a few
// messages of the subscription's source mapped by the target worker's own
// code (records.ts: parse, mapper, error routing), and for a PostgreSQL
// target the DDL its sink would run. The worker configuration is built from
// the resources as the operator builds it, its secrets resolved in memory as
// the process runtime resolves them. Nothing is written: no consumer group,
// no committed offset, no table.

/** What the response shows of a failed message at most. */
const MESSAGE_CHARS = 4096;

/** A failure of the system reached (source, stream broker, target): 502 with the sentence. */
async function upstream<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof SystemFailure) throw new HttpError(502, e.message);
    throw e;
  }
}

/** The worker configuration with its secrets; a missing secret is a 409 naming the reference. */
async function resolved(ctx: GatewayContext, config: WorkerConfig): Promise<WorkerConfig> {
  try {
    return await resolvedWorkerConfig(ctx, config);
  } catch (e) {
    if (e instanceof MissingSecretError) throw conflict(`Cannot preview: ${e.message}`);
    throw e;
  }
}

async function objectsOf(ctx: GatewayContext, id: string) {
  try {
    return await subscriptionObjects(ctx, id);
  } catch (e) {
    if (!(e instanceof MissingObjectError)) throw e;
    if (e.kind === 'Subscription') throw notFound('Subscription not found');
    throw conflict('The subscription references objects that do not exist');
  }
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** POST /subscriptions/{id}/preview: the caller must be able to read the subscription. */
export async function previewSubscription(
  ctx: GatewayContext,
  p: Principal,
  id: string,
  body: PreviewRequest,
): Promise<PreviewResult> {
  await loadSubscription(ctx, p, id);
  return preview(ctx, id, body);
}

/** POST /pipelines/{id}/preview: the preview of the pipeline's one subscription. */
export async function previewPipeline(
  ctx: GatewayContext,
  p: Principal,
  id: string,
  body: PreviewRequest,
): Promise<PreviewResult> {
  const row = await loadPipeline(ctx, p, id);
  return preview(ctx, row.subscription_id as string, body);
}

async function preview(ctx: GatewayContext, id: string, body: PreviewRequest): Promise<PreviewResult> {
  const o = await objectsOf(ctx, id);
  const database = o.source.spec.connectorType !== 'KAFKA_SOURCE';
  if (database && body.messages) {
    const issues = body.messages.flatMap((m, i) =>
      isObject(m)
        ? []
        : [{ loc: ['body', 'messages', i], msg: 'A row of the source table: an object', type: 'dict_type' }],
    );
    if (issues.length) throw unprocessable(issues);
  }
  const [source, target] = await Promise.all([
    resolved(ctx, sourceWorkerConfig(o.source, [o.datamodel])),
    resolved(
      ctx,
      targetWorkerConfig(o.target, [
        { subscription: o.subscription, datamodel: o.datamodel, source: o.source },
      ]),
    ),
  ]);
  const sub = target.subscriptions![0]!;
  let prepared: PreparedSubscription;
  try {
    prepared = prepareSubscription(sub);
  } catch (e) {
    // Rules are validated on write; rules applied from outside may not be.
    throw conflict(e instanceof Error ? e.message : String(e));
  }
  const ref = {
    connectorId: o.source.metadata.name,
    connectorType: o.source.spec.connectorType,
    datamodelId: o.datamodel.metadata.name,
    entry: o.datamodel.spec.entry,
    configuration: source.configuration,
  };
  const options = {
    policy: outboundPolicy(ctx),
    timeoutMs: CONNECTION_TIMEOUT_MS,
    limit: body.limit ?? PREVIEW_DEFAULT_LIMIT,
  };
  const fetched = body.messages
    ? givenMessages(sub, ref, body.messages)
    : await upstream(() => fetchedMessages(sub, ref, options));
  const mapped = mapAll(fetched, prepared);
  const warnings = [...fetched.warnings];
  const targetType = o.target.spec.connectorType;
  let ddl: PreviewResult['ddl'] = null;
  if (targetType === 'POSTGRES_TARGET') {
    ddl = await upstream(() => postgresDdl(target, mapped.records, options));
  } else if (writesTables(targetType)) {
    warnings.push(`The DDL preview covers PostgreSQL targets only in this version: none for ${targetType}`);
  }
  if (writesTables(targetType) && prepared.keyColumns.length === 0) {
    warnings.push('The mapping has no primary_key rule: a table target cannot start without one');
  }
  const et = sub.error_table;
  if (et.enabled && et.target_connector_id && et.target_connector_id !== target.connector_id) {
    warnings.push(
      'The error table is on another target connector: the worker of this version refuses to start with it',
    );
  }
  return {
    subscription_id: id,
    source: {
      kind: fetched.kind,
      topic: fetched.topic,
      table: fetched.table,
      fetched: fetched.messages.length,
    },
    rows: mapped.rows,
    errors: mapped.errors,
    ddl,
    warnings,
  };
}

/** Every message through the worker's mapping; rows of the target table apart from failures. */
function mapAll(fetched: PreviewMessages, s: PreparedSubscription) {
  const rows: PreviewResult['rows'] = [];
  const errors: PreviewResult['errors'] = [];
  const records: ReturnType<typeof mapMessage>['records'] = [];
  const errorTable = s.config.error_table.enabled ? (s.config.error_table.name ?? null) : null;
  const fromStream = fetched.kind === 'stream';
  fetched.messages.forEach((m, index) => {
    const out = mapMessage(m, [s]);
    for (const r of out.records) {
      // A truncate is no row of the table (nor any of its columns): not shown.
      if (r.op === 'truncate') continue;
      records.push(r);
      // Error-table rows are records too (the DDL covers them); they show as `errors` below.
      if (r.table !== s.config.target_table_name) continue;
      rows.push({ message_index: index, table: r.table, op: r.op, row: r.row, key_columns: r.keyColumns });
    }
    for (const f of out.failures) {
      const text = m.value?.toString('utf8') ?? null;
      errors.push({
        message_index: index,
        partition: fromStream ? m.partition : null,
        offset: fromStream ? m.offset.toString() : null,
        kind: f.kind,
        reason: f.reason,
        row_index: f.index,
        row: f.row,
        message: text === null ? null : text.slice(0, MESSAGE_CHARS),
        error_table: errorTable,
      });
    }
  });
  return { rows, errors, records };
}
