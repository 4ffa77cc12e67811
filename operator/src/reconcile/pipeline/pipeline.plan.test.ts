import { describe, expect, it } from '@jest/globals';
import {
  PIPELINE_MOVES,
  RESTART_ANNOTATION,
  type PipelineMove,
  STOP_ANNOTATION,
  type ConnectorResource,
  type PipelineResource,
  type SubscriptionResource,
} from '@sluice/shared/catalog';
import { connector, id, NOW, pipeline as pipelineOf, status, types } from '../../../test/plan-fixtures.js';
import { planPipeline } from './pipeline.plan.js';

describe('planPipeline (spec 3.1)', () => {
  const pipeline = (desiredState: 'draft' | 'running' | 'paused', annotations?: Record<string, string>) =>
    pipelineOf(
      { name: 'p', ownsTarget: false, desiredState },
      { generation: 2, ...(annotations ? { annotations } : {}) },
    );
  const src = (state?: string, desiredState: 'running' | 'stopped' = 'running') =>
    ({
      ...connector({ desiredState }),
      status: state ? { state, message: state === 'error' ? 'no route to host' : undefined } : undefined,
    }) as ConnectorResource;
  const dst = (state?: string, desiredState: 'running' | 'stopped' = 'running') =>
    ({
      ...connector({ name: 'wh', desiredState }, { name: id(4) }),
      status: state ? { state } : undefined,
    }) as ConnectorResource;
  const sub = (enabled: boolean) =>
    ({
      kind: 'Subscription',
      metadata: { name: id(3), namespace: 'ns' },
      spec: { enabled },
    }) as SubscriptionResource;

  it('start: writes only its own status, never a part (their effective state reads it)', () => {
    const plan = planPipeline({
      pipeline: pipeline('running', { [RESTART_ANNOTATION]: NOW }),
      source: src(undefined, 'stopped'),
      target: dst(),
      subscription: sub(false),
      now: NOW,
    });
    expect(types(plan)).toEqual(['patchStatus', 'event']);
    expect(status(plan)).toMatchObject({ state: 'building' });
  });

  it('is building until both connectors were started for its last start, then live', () => {
    const started = { [RESTART_ANNOTATION]: NOW };
    const before = { state: 'live', restartRequestedAt: '2026-11-23T11:00:00Z' };
    const stale = planPipeline({
      pipeline: pipeline('running', started),
      source: { ...src(), status: before } as ConnectorResource,
      target: { ...dst(), status: { state: 'live', restartRequestedAt: NOW } } as ConnectorResource,
      subscription: sub(false),
      now: NOW,
    });
    expect(status(stale)).toMatchObject({ state: 'building', message: 'Waiting for orders-src to be live' });
    const current = { state: 'live', restartRequestedAt: NOW };
    const live = planPipeline({
      pipeline: pipeline('running', started),
      source: { ...src(), status: current } as ConnectorResource,
      target: { ...dst(), status: current } as ConnectorResource,
      subscription: sub(false),
      now: NOW,
    });
    expect(status(live)).toMatchObject({ state: 'live' });
  });

  it('is error, naming the part, when a part was stopped by a call after its start', () => {
    const plan = planPipeline({
      pipeline: pipeline('running', { [RESTART_ANNOTATION]: '2026-11-23T11:00:00Z' }),
      source: {
        ...src('paused', 'stopped'),
        metadata: { ...src().metadata, annotations: { [STOP_ANNOTATION]: NOW } },
      } as ConnectorResource,
      target: dst('live'),
      subscription: sub(true),
      now: NOW,
    });
    expect(status(plan)).toMatchObject({
      state: 'error',
      message:
        'Source orders-src was stopped after the pipeline started: start it, or start the pipeline again',
    });
  });

  it('is live only when both connectors are live; error carries the failing part', () => {
    const live = planPipeline({
      pipeline: pipeline('running'),
      source: src('live'),
      target: dst('live'),
      subscription: sub(true),
      now: NOW,
    });
    expect(status(live)).toMatchObject({ state: 'live', observedGeneration: 2 });
    const building = planPipeline({
      pipeline: pipeline('running'),
      source: src('live'),
      target: dst('building'),
      subscription: sub(true),
      now: NOW,
    });
    expect(status(building)).toMatchObject({ state: 'building', message: 'Waiting for wh to be live' });
    const failed = planPipeline({
      pipeline: pipeline('running'),
      source: src('error'),
      target: dst('live'),
      subscription: sub(true),
      now: NOW,
    });
    expect(status(failed)).toMatchObject({ state: 'error', message: 'Source orders-src: no route to host' });
  });

  it('pause: paused at once, from any state, writing nothing but its status', () => {
    for (const state of ['live', 'building', 'error'] as const) {
      const plan = planPipeline({
        pipeline: { ...pipeline('paused'), status: { state } },
        source: src('live'),
        target: dst('error'),
        subscription: sub(true),
        now: NOW,
      });
      expect(types(plan)).toEqual(['patchStatus', 'event']);
      expect(status(plan)).toMatchObject({ state: 'paused' });
    }
  });

  it('a draft does nothing to its parts', () => {
    const plan = planPipeline({
      pipeline: pipeline('draft'),
      source: src(),
      target: dst(),
      subscription: sub(false),
      now: NOW,
    });
    expect(types(plan)).toEqual(['patchStatus', 'event']);
    expect(status(plan)).toMatchObject({ state: 'draft' });
  });

  it('writes the state of the move it makes (PIPELINE_MOVES), and makes each of them', () => {
    const plan = (
      p: PipelineResource,
      source = src('live'),
      target = dst('live'),
      subscription = sub(true),
    ) => planPipeline({ pipeline: p, source, target, subscription, now: NOW });
    const stoppedAfterStart = {
      ...src('paused', 'stopped'),
      metadata: { ...src().metadata, annotations: { [STOP_ANNOTATION]: NOW } },
    } as ConnectorResource;
    const made: Record<PipelineMove, ReturnType<typeof planPipeline>> = {
      draft: plan(pipeline('draft')),
      pauseAsked: plan(pipeline('paused')),
      partMissing: planPipeline({
        pipeline: pipeline('running'),
        source: undefined,
        target: dst(),
        subscription: sub(true),
        now: NOW,
      }),
      partStopped: plan(
        pipeline('running', { [RESTART_ANNOTATION]: '2026-11-23T11:00:00Z' }),
        stoppedAfterStart,
      ),
      partFailed: plan(pipeline('running'), src('error')),
      partsLive: plan(pipeline('running')),
      partsConverging: plan(pipeline('running'), src('live'), dst('building')),
    };
    expect(Object.keys(made).sort()).toEqual(Object.keys(PIPELINE_MOVES).sort());
    for (const [move, p] of Object.entries(made)) {
      expect([move, status(p)?.state]).toEqual([move, PIPELINE_MOVES[move as PipelineMove].to]);
    }
  });
});
