import {
  binlogPositionNow,
  remainingIn,
  retainedRange,
  TABLE_SOURCE_TYPES,
  type SourceReader,
} from '@sluice/dataplane';
import {
  changeStreamTopic,
  type ConnectorResource,
  type DataModelResource,
  type SubscriptionSpec,
} from '@sluice/shared/catalog';
import { type BackfillMode, type BackfillPreviewItem, type BackfillRequest } from '@sluice/shared/schemas';
import { requireTeam } from '../../auth/access.js';
import type { Principal } from '../../auth/principal.js';
import type { GatewayContext } from '../../context.js';
import { HttpError, unprocessable, type ValidationIssue } from '../../http/errors.js';
import { resourceOf } from '../../mirror/projections.js';
import {
  backfillTargetTypes,
  describeStreamFailure,
  openSourceTables,
  openStreamClient,
} from './backfills.connections.js';
import * as repo from './backfills.repository.js';

// What a backfill request means, checked before anything is written: every
// id exists and is in a team of the caller, the data models belong to the
// sources, the targets subscribe to them; then the (data model, target)
// pairs with their mode and what each would replay, measured on the source.

/**
 * How each source type is replayed: a Kafka source's topic, a database
 * source's tables; a type missing here cannot be backfilled by this version.
 */
const MODES: Record<string, BackfillMode> = {
  KAFKA_SOURCE: 'stream',
  ...Object.fromEntries(TABLE_SOURCE_TYPES.map((type) => [type, 'snapshot' as const])),
};

/** How a source type is backfilled; undefined when this version cannot. */
export const backfillModeOf = (connectorType: string): BackfillMode | undefined => MODES[connectorType];

/** The source types this version re-snapshots (database sources). */
export const snapshotSourceTypes = (): string[] =>
  Object.entries(MODES).flatMap(([type, mode]) => (mode === 'snapshot' ? [type] : []));

/** A (data model, target) pair and where its replay starts. */
export interface PlannedItem extends BackfillPreviewItem {
  /**
   * stream: the offset range per partition; snapshot: the key after which
   * to read (null: from the start) and, for MySQL and MariaDB, the binary
   * log position the re-snapshot is consistent from (binlog-resume.ts).
   */
  progress: unknown;
}

export interface BackfillPlan {
  teamId: string;
  items: PlannedItem[];
}

type Loc = (string | number)[];
const issue = (loc: Loc, msg: string): ValidationIssue => ({ loc, msg, type: 'value_error' });

type SubscriptionRow = Awaited<ReturnType<typeof repo.subscriptionsOf>>[number];
type DatamodelRow = Awaited<ReturnType<typeof repo.datamodelsByIds>>[number];
type ConnectorRow = Awaited<ReturnType<typeof repo.connectorsByIds>>[number];

/** A subscription to replay: its data model, source, target and table. */
interface Pair {
  source: ConnectorResource;
  datamodel: DataModelResource;
  subscriptionId: string;
  targetId: string;
  targetTable: string;
}

const toPair = (s: SubscriptionRow, dm: DatamodelRow, source: ConnectorRow): Pair => ({
  source: resourceOf<ConnectorResource>(source.id, source.spec),
  datamodel: resourceOf<DataModelResource>(dm.id, dm.spec),
  subscriptionId: s.id,
  targetId: s.target_connector_id,
  targetTable: (s.spec as SubscriptionSpec).targetTableName,
});

/** Checks the request and resolves its pairs; every 422 at once, 403 for a team the caller is not in. */
async function resolvePairs(ctx: GatewayContext, p: Principal, body: BackfillRequest) {
  const issues: ValidationIssue[] = [];
  const [sources, explicit, targets] = await Promise.all([
    repo.connectorsByIds(ctx.db, body.source_connector_ids),
    repo.datamodelsByIds(ctx.db, body.datamodel_ids),
    repo.connectorsByIds(ctx.db, body.target_connector_ids),
  ]);
  const sourceOf = new Map(sources.map((s) => [s.id, s]));
  const dmOf = new Map(explicit.map((d) => [d.id, d]));
  const targetOf = new Map(targets.map((t) => [t.id, t]));
  const teams = new Set<string>();
  body.source_connector_ids.forEach((id, i) => {
    const loc = ['body', 'source_connector_ids', i];
    const s = sourceOf.get(id);
    if (!s) issues.push(issue(loc, 'No such connector'));
    else if (s.direction !== 'source') issues.push(issue(loc, 'Not a source connector'));
    else if (!MODES[s.connector_type])
      issues.push(issue(loc, `Backfills of ${s.connector_type} are not supported by this version of Sluice`));
    if (s?.team_id) teams.add(s.team_id);
  });
  body.datamodel_ids.forEach((id, i) => {
    const loc = ['body', 'datamodel_ids', i];
    const d = dmOf.get(id);
    if (!d) issues.push(issue(loc, 'No such data model'));
    else if (!body.source_connector_ids.includes(d.connector_id))
      issues.push(issue(loc, 'The data model belongs to none of the source connectors'));
    if (d?.team_id) teams.add(d.team_id);
  });
  body.target_connector_ids.forEach((id, i) => {
    const loc = ['body', 'target_connector_ids', i];
    const t = targetOf.get(id);
    if (!t) issues.push(issue(loc, 'No such connector'));
    else if (t.direction !== 'target') issues.push(issue(loc, 'Not a target connector'));
    else if (!backfillTargetTypes().includes(t.connector_type))
      issues.push(
        issue(loc, `Backfills into ${t.connector_type} are not supported by this version of Sluice`),
      );
    if (t?.team_id) teams.add(t.team_id);
  });
  // Membership before the finer issues: a foreign object is a 403, whatever else is wrong.
  for (const team of teams) await requireTeam(ctx.db, p, team, 'member');
  if (issues.length > 0) throw unprocessable(issues);
  if (teams.size > 1) {
    throw unprocessable([issue(['body'], 'The connectors and data models belong to more than one team')]);
  }

  const datamodels =
    body.datamodel_ids.length > 0
      ? body.datamodel_ids.map((id) => dmOf.get(id)!)
      : await repo.enabledDatamodelsOf(ctx.db, body.source_connector_ids);
  const subs = datamodels.length
    ? await repo.subscriptionsOf(
        ctx.db,
        datamodels.map((d) => d.id),
        body.target_connector_ids,
      )
    : [];
  body.target_connector_ids.forEach((id, i) => {
    if (!subs.some((s) => s.target_connector_id === id))
      issues.push(
        issue(
          ['body', 'target_connector_ids', i],
          'The target subscribes (enabled) to none of the data models to replay',
        ),
      );
  });
  body.datamodel_ids.forEach((id, i) => {
    if (!subs.some((s) => s.datamodel_id === id))
      issues.push(
        issue(['body', 'datamodel_ids', i], 'No chosen target subscribes (enabled) to the data model'),
      );
  });
  if (issues.length === 0 && subs.length === 0)
    issues.push(
      issue(['body'], 'Nothing to replay: no enabled subscription joins these sources and targets'),
    );
  if (issues.length > 0) throw unprocessable(issues);

  const dmById = new Map(datamodels.map((d) => [d.id, d]));
  const pairs = subs.map((s) => {
    const dm = dmById.get(s.datamodel_id)!;
    return toPair(s, dm, sourceOf.get(dm.connector_id)!);
  });
  return { teamId: [...teams][0] ?? '', pairs };
}

/** The pairs with their mode, estimate and starting point, measured on the sources (one connection each). */
export async function planBackfill(
  ctx: GatewayContext,
  p: Principal,
  body: BackfillRequest,
): Promise<BackfillPlan> {
  const { teamId, pairs } = await resolvePairs(ctx, p, body);
  return { teamId, items: await measurePairs(ctx, pairs) };
}

/**
 * The one item backfilling an enabled subscription in its source's mode, for
 * a run the gateway starts itself (backfills.auto.ts: no caller, so no team
 * to check); null when the subscription, its data model or its source is gone
 * or disabled, or the source cannot be backfilled.
 */
export async function planSubscriptionBackfill(
  ctx: GatewayContext,
  ref: { subscriptionId: string; datamodelId: string; sourceId: string; targetId: string },
): Promise<PlannedItem | null> {
  const [[dm], [source], subs] = await Promise.all([
    repo.datamodelsByIds(ctx.db, [ref.datamodelId]),
    repo.connectorsByIds(ctx.db, [ref.sourceId]),
    repo.subscriptionsOf(ctx.db, [ref.datamodelId], [ref.targetId]),
  ]);
  const sub = subs.find((s) => s.id === ref.subscriptionId);
  if (!dm?.enabled || !source || !sub || !MODES[source.connector_type]) return null;
  const [item] = await measurePairs(ctx, [toPair(sub, dm, source)]);
  return item ?? null;
}

/** The pairs with their mode, estimate and starting point (one connection per source). */
async function measurePairs(ctx: GatewayContext, pairs: Pair[]): Promise<PlannedItem[]> {
  const items: PlannedItem[] = [];
  const bySource = new Map<string, typeof pairs>();
  for (const pair of pairs) {
    const id = pair.source.metadata.name;
    bySource.set(id, [...(bySource.get(id) ?? []), pair]);
  }
  for (const [sourceId, list] of bySource) {
    const mode = MODES[list[0]!.source.spec.connectorType]!;
    const measured = await measure(
      ctx,
      sourceId,
      mode,
      list.map((x) => ({ source: x.source, datamodel: x.datamodel })),
    );
    list.forEach((pair, i) => {
      items.push({
        source_connector_id: sourceId,
        datamodel_id: pair.datamodel.metadata.name,
        datamodel_name: pair.datamodel.spec.name,
        target_connector_id: pair.targetId,
        subscription_id: pair.subscriptionId,
        target_table_name: pair.targetTable,
        mode,
        ...measured[i]!,
      });
    });
  }
  return items;
}

/** Per data model: the estimate and the starting progress (400 with a sentence when the source cannot be read). */
async function measure(
  ctx: GatewayContext,
  sourceId: string,
  mode: BackfillMode,
  list: { source: ConnectorResource; datamodel: DataModelResource }[],
): Promise<{ estimated_messages: number; progress: unknown }[]> {
  const cannot = (why: string) => new HttpError(400, `Cannot read the source connector ${sourceId}: ${why}`);
  if (mode === 'stream') {
    try {
      const client = await openStreamClient(ctx, sourceId);
      try {
        const out = [];
        for (const { source, datamodel } of list) {
          const range = await retainedRange(client, changeStreamTopic(source, datamodel));
          out.push({ estimated_messages: remainingIn(range), progress: { partitions: range } });
        }
        return out;
      } finally {
        await client.close(true).catch(() => undefined);
      }
    } catch (e) {
      throw cannot(describeStreamFailure(e));
    }
  }
  let reader: SourceReader;
  try {
    reader = await openSourceTables(ctx, sourceId);
  } catch (e) {
    throw cannot(e instanceof Error ? e.message : String(e));
  }
  try {
    // Taken before any page is read: the changes after it are the stream's (binlog-resume.ts).
    const binlog = await binlogPositionNow(reader);
    const out = [];
    for (const { datamodel } of list) {
      out.push({
        estimated_messages: await reader.estimateRows(datamodel.spec.entry),
        progress: { after: null, ...(binlog ? { binlog } : {}) },
      });
    }
    return out;
  } catch (e) {
    throw cannot(reader.describe(e));
  } finally {
    await reader.close();
  }
}
