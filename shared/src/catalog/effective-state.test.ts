import { describe, expect, it } from '@jest/globals';
import { effectiveConnectorState, effectiveSubscriptionState } from './effective-state.js';
import {
  RESTART_ANNOTATION,
  STOP_ANNOTATION,
  type ConnectorResource,
  type PipelineResource,
  type SubscriptionResource,
} from './resources.js';

const T1 = '2026-11-23T10:00:00Z';
const T2 = '2026-11-23T11:00:00Z';
const SRC = '00000000-0000-4000-8000-000000000001';
const DST = '00000000-0000-4000-8000-000000000004';
const SUB = '00000000-0000-4000-8000-000000000003';

const meta = (name: string, annotations: Record<string, string> = {}) => ({
  name,
  namespace: 'ns',
  annotations,
});

function connector(desiredState: 'running' | 'stopped', annotations?: Record<string, string>) {
  return {
    kind: 'Connector',
    metadata: meta(SRC, annotations),
    spec: { name: 'orders-in', desiredState },
  } as unknown as ConnectorResource;
}
function subscription(enabled: boolean, annotations?: Record<string, string>) {
  return {
    kind: 'Subscription',
    metadata: meta(SUB, annotations),
    spec: { enabled },
  } as unknown as SubscriptionResource;
}
function pipeline(
  name: string,
  desiredState: 'draft' | 'running' | 'paused',
  annotations?: Record<string, string>,
  ownsSource = true,
) {
  return {
    kind: 'Pipeline',
    metadata: meta(`p-${name}`, annotations),
    spec: {
      name,
      desiredState,
      sourceConnectorId: SRC,
      targetConnectorId: DST,
      subscriptionId: SUB,
      ownsSource,
      ownsTarget: true,
    },
  } as unknown as PipelineResource;
}

describe('effective state of a pipeline part (nobody writes it into a spec)', () => {
  it('its own spec when no pipeline uses it', () => {
    expect(effectiveConnectorState(connector('running'), [])).toMatchObject({
      state: 'running',
      reason: 'Its desiredState is running',
    });
    expect(effectiveConnectorState(connector('stopped'), [])).toMatchObject({ state: 'stopped' });
    expect(effectiveSubscriptionState(subscription(false), [])).toMatchObject({ state: 'disabled' });
  });

  it('a running pipeline runs its parts although they declare stopped / disabled (examples/)', () => {
    const p = pipeline('orders-copy', 'running');
    expect(effectiveConnectorState(connector('stopped'), [p])).toEqual({
      state: 'running',
      reason: 'Run by pipeline orders-copy',
      restartRequestedAt: '',
    });
    expect(effectiveSubscriptionState(subscription(false), [p])).toMatchObject({
      state: 'enabled',
      reason: 'Enabled by pipeline orders-copy',
    });
  });

  it('an explicit stop after the pipeline started sticks, until the pipeline or the part is started again', () => {
    const started = pipeline('orders-copy', 'running', { [RESTART_ANNOTATION]: T1 });
    const stopped = connector('stopped', { [STOP_ANNOTATION]: T2 });
    expect(effectiveConnectorState(stopped, [started])).toMatchObject({
      state: 'stopped',
      reason: 'Stopped by a stop call after pipeline orders-copy started',
    });
    // A pipeline applied with kubectl (no start time): the stop call is the latest word.
    expect(effectiveConnectorState(stopped, [pipeline('gitops', 'running')]).state).toBe('stopped');
    const restarted = pipeline('orders-copy', 'running', { [RESTART_ANNOTATION]: '2026-11-23T12:00:00Z' });
    expect(effectiveConnectorState(stopped, [restarted])).toMatchObject({
      state: 'running',
      restartRequestedAt: '2026-11-23T12:00:00Z',
    });
    const paused = subscription(false, { [STOP_ANNOTATION]: T2 });
    expect(effectiveSubscriptionState(paused, [started]).state).toBe('disabled');
  });

  it('a paused pipeline stops the parts it owns, unless they were started on their own after the pause', () => {
    const paused = pipeline('orders-copy', 'paused', { [STOP_ANNOTATION]: T2 });
    // Started by an earlier pipeline start (or an older operator that wrote the spec).
    const before = connector('running', { [RESTART_ANNOTATION]: T1 });
    expect(effectiveConnectorState(before, [paused])).toMatchObject({
      state: 'stopped',
      reason: 'Stopped with pipeline orders-copy (paused)',
    });
    expect(effectiveSubscriptionState(subscription(true), [paused]).state).toBe('disabled');
    const after = connector('running', { [RESTART_ANNOTATION]: '2026-11-23T12:00:00Z' });
    expect(effectiveConnectorState(after, [paused]).state).toBe('running');
    // Not its own: a pipeline that only uses a connector leaves it to its own spec.
    const user = pipeline('other', 'paused', { [STOP_ANNOTATION]: T2 }, false);
    expect(effectiveConnectorState(before, [user]).state).toBe('running');
  });

  it('a running pipeline wins over a paused one that owns the same connector; drafts count for nothing', () => {
    const c = connector('stopped');
    const running = pipeline('reader', 'running', { [RESTART_ANNOTATION]: T1 }, false);
    const paused = pipeline('owner', 'paused', { [STOP_ANNOTATION]: T2 });
    expect(effectiveConnectorState(c, [paused, running])).toMatchObject({
      state: 'running',
      reason: 'Run by pipeline reader',
    });
    expect(effectiveConnectorState(c, [pipeline('draft', 'draft')]).state).toBe('stopped');
  });

  it('ignores pipelines being deleted and pipelines that do not use it', () => {
    const gone = { ...pipeline('gone', 'running'), metadata: { ...meta('p'), deletionTimestamp: T1 } };
    expect(effectiveConnectorState(connector('stopped'), [gone as PipelineResource]).state).toBe('stopped');
    const elsewhere = pipeline('elsewhere', 'running');
    elsewhere.spec.sourceConnectorId = DST;
    elsewhere.spec.subscriptionId = DST;
    expect(effectiveConnectorState(connector('stopped'), [elsewhere]).state).toBe('stopped');
    expect(effectiveSubscriptionState(subscription(false), [elsewhere]).state).toBe('disabled');
  });
});
