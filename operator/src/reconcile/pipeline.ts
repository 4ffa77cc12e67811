import {
  RESTART_ANNOTATION,
  type ConnectorResource,
  type PipelineResource,
  type PipelineState,
  type SubscriptionResource,
} from '@sluice/shared';
import type { Action, ObjectRef, Plan } from './actions.js';
import { connectorRef } from './connector.js';
import { slotRetentionCondition } from './slot-retention.js';
import { stateStatusActions } from './state-status.js';

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
 * Spec 3.1 as a pure function. A pipeline drives its parts: running means
 * its subscription enabled and both connectors running (each carrying the
 * pipeline's restart request, so a retry restarts their workers); paused
 * means its subscription disabled and the connectors it created stopped
 * (connectors it only uses keep serving others). Its own state summarises
 * them, because Argo CD does not pass a child's health up to its parent:
 * `error` with the failing part's message, `live` only when both connectors
 * are live, `building` meanwhile.
 */
export function planPipeline(input: PipelineInput): Plan {
  const p = input.pipeline;
  const ref: ObjectRef = { kind: 'Pipeline', namespace: p.metadata.namespace, name: p.metadata.name };
  const actions: Action[] = [];
  if (p.metadata.deletionTimestamp) return { actions };
  const { source, target, subscription } = input;
  const desired = p.spec.desiredState;
  const restart = p.metadata.annotations?.[RESTART_ANNOTATION];

  let state: PipelineState;
  let message = '';
  const missing = [
    ...(source ? [] : ['source connector']),
    ...(target ? [] : ['target connector']),
    ...(subscription ? [] : ['subscription']),
  ];
  if (desired === 'draft') {
    state = 'draft';
  } else if (missing.length > 0 || !source || !target || !subscription) {
    state = 'error';
    message = `The pipeline's ${missing.join(' and ')} no longer exists`;
  } else if (desired === 'running') {
    if (!subscription.spec.enabled) {
      actions.push({ type: 'patch', ref: subRef(subscription), patch: { spec: { enabled: true } } });
    }
    for (const c of [source, target]) {
      const restartDiffers =
        restart !== undefined && c.metadata.annotations?.[RESTART_ANNOTATION] !== restart;
      if (c.spec.desiredState !== 'running' || restartDiffers) {
        actions.push({
          type: 'patch',
          ref: connectorRef(c),
          patch: {
            ...(restartDiffers ? { metadata: { annotations: { [RESTART_ANNOTATION]: restart } } } : {}),
            spec: { desiredState: 'running' },
          },
        });
      }
    }
    const failed = [source, target].find((c) => c.status?.state === 'error');
    if (failed) {
      state = 'error';
      message = `${failed === source ? 'Source' : 'Target'} ${failed.spec.name}: ${failed.status?.message ?? 'failed'}`;
    } else if (
      actions.length === 0 &&
      source.status?.state === 'live' &&
      target.status?.state === 'live' &&
      subscription.spec.enabled
    ) {
      state = 'live';
    } else {
      state = 'building';
      const waiting = [source, target].filter((c) => c.status?.state !== 'live').map((c) => c.spec.name);
      message = waiting.length ? `Waiting for ${waiting.join(' and ')} to be live` : 'Applying the pipeline';
    }
  } else {
    if (subscription.spec.enabled) {
      actions.push({ type: 'patch', ref: subRef(subscription), patch: { spec: { enabled: false } } });
    }
    const owned = [...(p.spec.ownsSource ? [source] : []), ...(p.spec.ownsTarget ? [target] : [])];
    for (const c of owned) {
      if (c.spec.desiredState !== 'stopped') {
        actions.push({ type: 'patch', ref: connectorRef(c), patch: { spec: { desiredState: 'stopped' } } });
      }
    }
    state = 'paused';
  }

  // The source's slot is the pipeline's problem too (Argo CD shows the parent, not the child).
  const degraded = slotRetentionCondition(source?.status?.replicationSlot, input.slotWalDegradedBytes);
  actions.push(
    ...stateStatusActions(ref, p.status, state, message, p.metadata.generation ?? 0, input.now, degraded),
  );
  return { actions };
}

function subRef(s: SubscriptionResource): ObjectRef {
  return { kind: 'Subscription', namespace: s.metadata.namespace, name: s.metadata.name };
}
