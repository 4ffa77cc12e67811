import { describe, expect, it } from '@jest/globals';
import { LOOKING, NOT_READ_YET, TURNED_ON_LATER } from '../backfills/backfills.reasons.js';
import { autoBackfillView } from './subscriptions.mapper.js';
import type { SubscriptionRecord } from './subscriptions.repository.js';

const HOUR = 3_600_000;
const created = new Date('2026-11-24T08:00:00Z');

const row = (over: Partial<SubscriptionRecord> & { backfill?: boolean }): SubscriptionRecord => ({
  id: '0d2f53f5-a5f2-4b7e-b9b7-923639a0804b',
  name: 's',
  team_id: null,
  datamodel_id: '6c9b8a32-b3b2-4699-a3dc-89220ad15a1b',
  target_connector_id: '6c9b8a32-b3b2-4699-a3dc-89220ad15a1c',
  enabled: true,
  spec: { backfill: over.backfill ?? true },
  created_at: created,
  updated_at: created,
  backfill_on_at: null,
  backfill_on_consumed: null,
  auto_backfill_decision: null,
  auto_backfill_reason: null,
  auto_backfill_run_id: null,
  auto_backfill_decided_at: null,
  ...over,
});

describe('autoBackfillView: what a subscription says of its automatic re-snapshot', () => {
  const soon = new Date(created.getTime() + HOUR);

  it('is null without backfill, pending until decided', () => {
    expect(autoBackfillView(row({ backfill: false }), 168 * HOUR, soon)).toBeNull();
    expect(autoBackfillView(row({}), 168 * HOUR, soon)).toMatchObject({
      state: 'pending',
      backfill_id: null,
    });
  });

  it('shows a recorded decision, whatever the flag or the age says now', () => {
    const decided = row({
      backfill: false,
      auto_backfill_decision: 'started',
      auto_backfill_reason: 'the change stream holds no message',
      auto_backfill_run_id: '6c9b8a32-b3b2-4699-a3dc-89220ad15a1d',
      auto_backfill_decided_at: soon,
    });
    expect(autoBackfillView(decided, 0, new Date(created.getTime() + 1000 * HOUR))).toEqual({
      state: 'started',
      reason: 'the change stream holds no message',
      backfill_id: '6c9b8a32-b3b2-4699-a3dc-89220ad15a1d',
      decided_at: soon.toISOString(),
    });
  });

  it('is pending again when backfill was turned on after the last decision, counted from the switch', () => {
    const asked = new Date(created.getTime() + 200 * HOUR);
    const decidedBefore = {
      auto_backfill_decision: 'skipped' as const,
      auto_backfill_reason: "the change stream begins with the source's snapshot",
      auto_backfill_decided_at: new Date(created.getTime() + HOUR),
    };
    const switched = row({ ...decidedBefore, backfill_on_at: asked, backfill_on_consumed: true });
    expect(autoBackfillView(switched, 168 * HOUR, new Date(asked.getTime() + HOUR))).toEqual({
      state: 'pending',
      reason: `${TURNED_ON_LATER}: replayed once the subscription, its data model and both of its connectors are live`,
      backfill_id: null,
      decided_at: null,
    });
    expect(autoBackfillView(switched, 168 * HOUR, new Date(asked.getTime() + 168 * HOUR))).toMatchObject({
      state: 'unchecked',
      reason: 'the subscription was not live within 168 hours of backfill being turned on',
    });
    // Turned off again before anything ran: nothing to show.
    expect(autoBackfillView({ ...switched, spec: { backfill: false } }, 168 * HOUR, asked)).toBeNull();
    // Decided after the switch: that decision.
    const decidedAfter = row({
      backfill_on_at: asked,
      auto_backfill_decision: 'started',
      auto_backfill_reason: TURNED_ON_LATER,
      auto_backfill_run_id: '6c9b8a32-b3b2-4699-a3dc-89220ad15a1e',
      auto_backfill_decided_at: new Date(asked.getTime() + 60_000),
    });
    expect(autoBackfillView(decidedAfter, 168 * HOUR, new Date(asked.getTime() + HOUR))).toMatchObject({
      state: 'started',
      backfill_id: '6c9b8a32-b3b2-4699-a3dc-89220ad15a1e',
    });
  });

  it('says, after a switch, whether the consumer had read the stream: looking, replayed, or decided as new', () => {
    const asked = new Date(created.getTime() + 2 * HOUR);
    const later = new Date(asked.getTime() + 60_000);
    const view = (consumed: boolean | null) =>
      autoBackfillView(row({ backfill_on_at: asked, backfill_on_consumed: consumed }), 168 * HOUR, later)
        ?.reason;
    expect(view(null)).toBe(`${LOOKING}: the gateway looks whether its consumer has read the stream yet`);
    expect(view(true)).toMatch(new RegExp(`^${TURNED_ON_LATER}: replayed once`));
    expect(view(false)).toBe(
      `${NOT_READ_YET}, so it reads the stream from its beginning: decided as for a new subscription once the subscription, its data model and both of its connectors are live`,
    );
  });

  it('is unchecked when the gateway will never decide: the feature off, or past the age bound', () => {
    expect(autoBackfillView(row({}), 0, soon)).toMatchObject({
      state: 'unchecked',
      reason: 'automatic re-snapshots are turned off on this gateway',
    });
    expect(autoBackfillView(row({}), 168 * HOUR, new Date(created.getTime() + 168 * HOUR))).toMatchObject({
      state: 'unchecked',
      reason: 'the subscription was not live within 168 hours of its creation',
    });
  });
});
