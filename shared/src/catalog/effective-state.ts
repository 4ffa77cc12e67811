import {
  RESTART_ANNOTATION,
  STOP_ANNOTATION,
  type ConnectorResource,
  type EffectiveConnectorState,
  type EffectiveSubscriptionState,
  type PipelineResource,
  type SubscriptionResource,
} from './resources.js';

// What a pipeline's parts do, computed from their own spec and the specs of
// the pipelines that use them; nobody writes it into a spec, so a user's
// declaration (kubectl, Argo CD, Flux) is never rewritten by the operator
// (docs/architecture.md, "Effective state"). The rule, for a connector or a
// subscription X:
//
//  1. A running pipeline that uses X runs it, unless X was stopped by a call
//     made after that pipeline's last start (X's stopped-at is later than the
//     pipeline's restarted-at): an explicit stop sticks until the pipeline or
//     X is started again.
//  2. Otherwise a paused pipeline that owns X stops it (a pipeline owns its
//     subscription, and the connectors it created), unless X was started by
//     a call made after that pipeline's last pause.
//  3. Otherwise X's own spec says: `desiredState: running` / `enabled: true`.
//
// A draft pipeline does nothing to its parts. A connector that serves a
// running pipeline keeps running even when another pipeline that owns it is
// paused.

export interface Effective<S extends string> {
  state: S;
  /** Why, in one sentence a user reads in `kubectl get -o wide` and in the API. */
  reason: string;
  /** The latest start request that applies to it (its own, or a pipeline's that runs it); '' if none. */
  restartRequestedAt: string;
}

type Part = ConnectorResource | SubscriptionResource;

const annotation = (o: { metadata: { annotations?: Record<string, string> } }, key: string): string =>
  o.metadata.annotations?.[key] ?? '';

/** Whether the time `a` is later than `b`; an absent `a` never is, an absent `b` is earlier than any time. */
function later(a: string, b: string): boolean {
  const ta = Date.parse(a);
  if (Number.isNaN(ta)) return false;
  const tb = Date.parse(b);
  return Number.isNaN(tb) || ta > tb;
}

function latest(times: readonly string[]): string {
  return times.reduce((max, t) => (later(t, max) ? t : max), '');
}

const names = (ps: readonly PipelineResource[]) =>
  ps
    .map((p) => p.spec.name)
    .sort()
    .join(', ');

interface Uses {
  /** The pipelines that use the part. */
  uses: PipelineResource[];
  /** Those of them that own it. */
  owns: (p: PipelineResource) => boolean;
}

function decide(part: Part, { uses, owns }: Uses, own: boolean) {
  const live = uses.filter((p) => !p.metadata.deletionTimestamp);
  const stoppedAt = annotation(part, STOP_ANNOTATION);
  const startedAt = annotation(part, RESTART_ANNOTATION);
  const running = live.filter((p) => p.spec.desiredState === 'running');
  const runBy = running.filter((p) => !later(stoppedAt, annotation(p, RESTART_ANNOTATION)));
  if (runBy.length > 0) {
    return {
      run: true,
      by: runBy,
      restartRequestedAt: latest([startedAt, ...runBy.map((p) => annotation(p, RESTART_ANNOTATION))]),
    };
  }
  const pausedBy = live.filter(
    (p) => p.spec.desiredState === 'paused' && owns(p) && !later(startedAt, annotation(p, STOP_ANNOTATION)),
  );
  if (pausedBy.length > 0) return { run: false, by: pausedBy, restartRequestedAt: startedAt };
  return { run: own, by: [] as PipelineResource[], stoppedAfter: running, restartRequestedAt: startedAt };
}

/**
 * Whether a connector's worker runs, given the pipelines whose source or
 * target it is (others are ignored).
 */
export function effectiveConnectorState(
  c: ConnectorResource,
  pipelines: readonly PipelineResource[],
): Effective<EffectiveConnectorState> {
  const name = c.metadata.name;
  const uses = pipelines.filter(
    (p) => p.spec.sourceConnectorId === name || p.spec.targetConnectorId === name,
  );
  const owns = (p: PipelineResource) =>
    (p.spec.ownsSource && p.spec.sourceConnectorId === name) ||
    (p.spec.ownsTarget && p.spec.targetConnectorId === name);
  const d = decide(c, { uses, owns }, c.spec.desiredState === 'running');
  const state = d.run ? 'running' : 'stopped';
  let reason: string;
  if (d.by.length > 0) {
    reason = d.run ? `Run by pipeline ${names(d.by)}` : `Stopped with pipeline ${names(d.by)} (paused)`;
  } else if (!d.run && d.stoppedAfter?.length) {
    reason = `Stopped by a stop call after pipeline ${names(d.stoppedAfter)} started`;
  } else {
    reason = `Its desiredState is ${c.spec.desiredState}`;
  }
  return { state, reason, restartRequestedAt: d.restartRequestedAt };
}

/** Whether a subscription is delivered, given the pipelines that use it (others are ignored). */
export function effectiveSubscriptionState(
  s: SubscriptionResource,
  pipelines: readonly PipelineResource[],
): Effective<EffectiveSubscriptionState> {
  const uses = pipelines.filter((p) => p.spec.subscriptionId === s.metadata.name);
  const d = decide(s, { uses, owns: () => true }, s.spec.enabled);
  const state = d.run ? 'enabled' : 'disabled';
  let reason: string;
  if (d.by.length > 0) {
    reason = d.run ? `Enabled by pipeline ${names(d.by)}` : `Disabled with pipeline ${names(d.by)} (paused)`;
  } else if (!d.run && d.stoppedAfter?.length) {
    reason = `Disabled by a pause call after pipeline ${names(d.stoppedAfter)} started`;
  } else {
    reason = s.spec.enabled ? 'Its spec enables it' : 'Its spec disables it';
  }
  return { state, reason, restartRequestedAt: d.restartRequestedAt };
}

/**
 * The subscription as the worker configuration reads it: `enabled` is the
 * effective switch. The object is a copy; the spec it came from is unchanged.
 */
export function withEffectiveEnabled(
  s: SubscriptionResource,
  pipelines: readonly PipelineResource[],
): SubscriptionResource {
  const enabled = effectiveSubscriptionState(s, pipelines).state === 'enabled';
  return enabled === s.spec.enabled ? s : { ...s, spec: { ...s.spec, enabled } };
}
