import {
  effectiveConnectorState,
  PIPELINE_MOVES,
  effectiveSubscriptionState,
  RESTART_ANNOTATION,
  type ConnectorResource,
  type PipelineResource,
  type PipelineMove,
  type SubscriptionResource,
} from '@sluice/shared/catalog';
import type { Action, ObjectRef, Plan } from '../actions.js';
import { binlogRetentionCondition } from '../binlog-retention.js';
import { slotRetentionCondition } from '../slot-retention.js';
import { stateStatusActions } from '../state-status.js';

export interface PipelineInput {
  pipeline: PipelineResource;
  source: ConnectorResource | undefined;
  target: ConnectorResource | undefined;
  subscription: SubscriptionResource | undefined;
  /** Retained WAL of the source's replication slot past which the pipeline is Degraded; unset: never. */
  slotWalDegradedBytes?: number;
  now: string;
}

/**
 * Spec 3.1 as a pure function: each reconcile picks one of the moves of
 * PIPELINE_MOVES (shared/src/catalog/states.ts), whose state it writes. A pipeline drives its parts without writing
 * them: whether its connectors run and its subscription is delivered is
 * their effective state (effective-state.ts), which their own reconciles
 * compute from their spec and this pipeline's; this plan only writes the
 * pipeline's status. Its state summarises the parts, because Argo CD does
 * not pass a child's health up to its parent: `error` with the failing
 * part's message (or the part stopped by a call after the pipeline's start),
 * `live` only when both connectors are live with the pipeline's last start
 * request, `building` meanwhile; `paused` as soon as it is asked to pause.
 */
export function planPipeline(input: PipelineInput): Plan {
  const p = input.pipeline;
  const ref: ObjectRef = { kind: 'Pipeline', namespace: p.metadata.namespace, name: p.metadata.name };
  const actions: Action[] = [];
  if (p.metadata.deletionTimestamp) return { actions };
  const { source, target, subscription } = input;
  const desired = p.spec.desiredState;
  const restart = p.metadata.annotations?.[RESTART_ANNOTATION] ?? '';

  let move: PipelineMove;
  let message = '';
  const missing = [
    ...(source ? [] : ['source connector']),
    ...(target ? [] : ['target connector']),
    ...(subscription ? [] : ['subscription']),
  ];
  if (desired === 'draft') {
    move = 'draft';
  } else if (missing.length > 0 || !source || !target || !subscription) {
    move = 'partMissing';
    message = `The pipeline's ${missing.join(' and ')} no longer exists`;
  } else if (desired === 'running') {
    const side = (c: ConnectorResource) => (c === source ? 'Source' : 'Target');
    // A part this pipeline does not run: stopped (or paused) by a call made after its start.
    const stopped = [source, target].find((c) => effectiveConnectorState(c, [p]).state === 'stopped');
    const failed = [source, target].find((c) => c.status?.state === 'error');
    // Both workers started for this pipeline's last start (a start restarts them).
    const current = (c: ConnectorResource) =>
      !restart || Date.parse(c.status?.restartRequestedAt ?? '') >= Date.parse(restart);
    if (stopped) {
      move = 'partStopped';
      message = `${side(stopped)} ${stopped.spec.name} was stopped after the pipeline started: start it, or start the pipeline again`;
    } else if (effectiveSubscriptionState(subscription, [p]).state === 'disabled') {
      move = 'partStopped';
      message = `Its subscription ${subscription.spec.name} was disabled after the pipeline started: start it, or start the pipeline again`;
    } else if (failed) {
      move = 'partFailed';
      message = `${side(failed)} ${failed.spec.name}: ${failed.status?.message ?? 'failed'}`;
    } else if (
      source.status?.state === 'live' &&
      target.status?.state === 'live' &&
      current(source) &&
      current(target)
    ) {
      move = 'partsLive';
    } else {
      move = 'partsConverging';
      const waiting = [source, target]
        .filter((c) => c.status?.state !== 'live' || !current(c))
        .map((c) => c.spec.name);
      message = `Waiting for ${waiting.join(' and ')} to be live`;
    }
  } else {
    move = 'pauseAsked';
  }

  const state = PIPELINE_MOVES[move].to;
  // The source's slot or binary logs are the pipeline's problem too (Argo CD shows the parent, not the child).
  const degraded =
    slotRetentionCondition(source?.status?.replicationSlot, input.slotWalDegradedBytes) ??
    (source ? binlogRetentionCondition(source) : undefined);
  actions.push(
    ...stateStatusActions(ref, p.status, state, message, p.metadata.generation ?? 0, input.now, degraded),
  );
  return { actions };
}
