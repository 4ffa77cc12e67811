import type { ConnectorState, PipelineState } from './resources.js';

// The state machines of spec section 3, as data: the gateway answers a call
// the table does not allow with 409, and the operator makes the
// automatic moves. One definition, read by both.

export interface Transition<S extends string> {
  from: readonly S[];
  to: S;
}

/**
 * Spec 3.1. Three moves go beyond the table, because a user needs a way out
 * of them: `start` from `error` retries, and `pause` while `building` or in
 * `error` gives up a deployment that does not converge (wrong credentials, a
 * broker that is down): its workers stop and stop being retried.
 */
export const PIPELINE_CALLS = {
  start: { from: ['draft', 'paused', 'error'], to: 'building' },
  pause: { from: ['live', 'building', 'error'], to: 'paused' },
} as const satisfies Record<string, Transition<PipelineState>>;
export type PipelineCall = keyof typeof PIPELINE_CALLS;

/** The initial state of a pipeline without a status yet (spec 3.1: created draft). */
export const PIPELINE_INITIAL_STATE: PipelineState = 'draft';

/**
 * Spec 3.2. `start` also retries from `error`; `stop` also stops a connector
 * that is still `building` or failed (`error`): the worker has to go either way.
 */
export const CONNECTOR_CALLS = {
  start: { from: ['paused', 'error'], to: 'building' },
  stop: { from: ['live', 'building', 'error'], to: 'stopping' },
} as const satisfies Record<string, Transition<ConnectorState>>;
export type ConnectorCall = keyof typeof CONNECTOR_CALLS;

/** Spec 3.2: connectors are created paused. */
export const CONNECTOR_INITIAL_STATE: ConnectorState = 'paused';

/** The next state, or undefined when the call is not allowed in `state`. */
export function nextState<S extends string>(transition: Transition<S>, state: S): S | undefined {
  return (transition.from as readonly string[]).includes(state) ? transition.to : undefined;
}
