import { describe, expect, it } from '@jest/globals';
import { decideAutoBackfill, type AutoRow } from './backfills.auto.js';
import { TURNED_ON_LATER } from './backfills.reasons.js';

// The pure rule of automatic re-snapshots: when to wait, when to look at the
// stream, and what its beginning decides.

const row = (over: Partial<AutoRow> = {}): AutoRow => ({
  subscription_id: 'sub-1',
  namespace: 'sluice',
  team_id: 'team-1',
  enabled: true,
  datamodel_id: 'dm-1',
  datamodel_enabled: true,
  datamodel_spec: { entry: 'public.parts' },
  source_id: 'src-1',
  source_type: 'POSTGRES_SOURCE',
  source_state: 'live',
  source_spec: { connectorType: 'POSTGRES_SOURCE' },
  target_id: 'tgt-1',
  target_type: 'POSTGRES_TARGET',
  target_state: 'live',
  turned_on_later: false,
  ...over,
});

describe('decideAutoBackfill', () => {
  it('looks at the data model stream once source and target are live', () => {
    expect(decideAutoBackfill(row())).toEqual({ action: 'probe', topic: 'sluice.dm-1' });
    expect(decideAutoBackfill(row({ datamodel_spec: { entry: 'x', targetTopic: 'cdc.parts' } }))).toEqual({
      action: 'probe',
      topic: 'cdc.parts',
    });
  });

  it('waits while the pipeline does not run: nothing is written into a target never started', () => {
    for (const over of [
      { source_state: 'paused' },
      { target_state: 'building' },
      { enabled: false },
      { datamodel_enabled: false },
    ])
      expect(decideAutoBackfill(row(over))).toEqual({ action: 'wait' });
  });

  it('looks at the stream of MySQL and MariaDB sources as of PostgreSQL ones, and re-snapshots them alike', () => {
    for (const source_type of ['MYSQL_SOURCE', 'MARIADB_SOURCE']) {
      expect(decideAutoBackfill(row({ source_type }))).toEqual({ action: 'probe', topic: 'sluice.dm-1' });
      expect(decideAutoBackfill(row({ source_type }), 'truncated').action).toBe('snapshot');
      expect(decideAutoBackfill(row({ source_type, turned_on_later: true }))).toEqual({
        action: 'snapshot',
        reason: TURNED_ON_LATER,
      });
    }
  });

  it('re-snapshots when the stream lacks the beginning, and says why', () => {
    expect(decideAutoBackfill(row(), 'truncated')).toEqual({
      action: 'snapshot',
      reason: "retention removed the beginning of the change stream, and the source's snapshot with it",
    });
    for (const start of ['absent', 'empty', 'changes'] as const)
      expect(decideAutoBackfill(row(), start).action).toBe('snapshot');
    expect(decideAutoBackfill(row(), 'snapshot')).toEqual({
      action: 'skip',
      reason: "the change stream begins with the source's snapshot",
    });
  });

  it('skips, for good, what this version does not re-snapshot', () => {
    expect(decideAutoBackfill(row({ source_type: 'KAFKA_SOURCE' }))).toMatchObject({
      action: 'skip',
      reason: expect.stringMatching(/retained topic is the stream/),
    });
    expect(decideAutoBackfill(row({ source_type: 'MSSQL_SOURCE' }))).toMatchObject({
      action: 'skip',
      reason: 'backfills of MSSQL_SOURCE are not supported by this version',
    });
    expect(decideAutoBackfill(row({ target_type: 'ORACLE_TARGET' }))).toMatchObject({ action: 'skip' });
    expect(decideAutoBackfill(row({ team_id: null }))).toMatchObject({ action: 'skip' });
  });

  it('replays a subscription whose backfill was turned on later in its source mode, without a probe, once live', () => {
    const later = { turned_on_later: true };
    expect(decideAutoBackfill(row(later))).toEqual({ action: 'snapshot', reason: TURNED_ON_LATER });
    expect(decideAutoBackfill(row({ ...later, source_type: 'KAFKA_SOURCE' }))).toEqual({
      action: 'replay',
      reason: TURNED_ON_LATER,
    });
    expect(decideAutoBackfill(row({ ...later, target_state: 'paused' }))).toEqual({ action: 'wait' });
    expect(decideAutoBackfill(row({ ...later, source_type: 'MSSQL_SOURCE' }))).toMatchObject({
      action: 'skip',
    });
  });
});
