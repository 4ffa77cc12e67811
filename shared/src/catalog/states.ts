import type { ConnectorState, PipelineState, WAREHOUSE_STATES } from './resources.js';

type WarehouseState = (typeof WAREHOUSE_STATES)[number];

// The state machines of spec section 3, as data: the calls a user makes
// (the gateway answers one the table does not allow with 409) beside the
// moves the operator makes on its own (its planners pick one per reconcile).
// One definition, read by both.

export interface Transition<S extends string> {
  from: readonly S[];
  to: S;
}

/**
 * A move the operator makes from what it observes. Reconciles are level
 * based: the planner decides from the objects and the worker as they are
 * now, whatever the state was before, so a move has no `from`; `when` is
 * spec 3's "trigger / condition" in words.
 */
export interface AutomaticMove<S extends string> {
  when: string;
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
 * Spec 3.1's automatic move (building → live when the deployment
 * completes) and the moves into `error` the spec leaves unshown. A pipeline
 * writes no part: its state summarises its connectors and subscription
 * (operator/src/reconcile/pipeline/).
 */
export const PIPELINE_MOVES = {
  draft: { when: 'its desiredState is draft: never started', to: 'draft' },
  pauseAsked: { when: 'its desiredState is paused: a pause call or a manifest', to: 'paused' },
  partMissing: { when: 'its source, target or subscription no longer exists', to: 'error' },
  partStopped: {
    when: 'a connector was stopped, or its subscription disabled, by a call after its start',
    to: 'error',
  },
  partFailed: { when: 'a connector is in error', to: 'error' },
  partsLive: { when: 'both connectors are live, started for its last start request', to: 'live' },
  partsConverging: { when: 'running, and a connector is not live for its last start yet', to: 'building' },
} as const satisfies Record<string, AutomaticMove<PipelineState>>;
export type PipelineMove = keyof typeof PIPELINE_MOVES;

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

/**
 * Spec 3.2's automatic moves (the worker converges: live or error; the
 * worker is gone: paused) and those the operator adds for a worker that
 * ends or restarts. Whether the connector runs is its effective state (its
 * spec and its pipelines', effective-state.ts); the planner is in
 * operator/src/reconcile/connector/.
 */
export const CONNECTOR_MOVES = {
  workerReady: { when: 'runs, and the worker of its current configuration is ready', to: 'live' },
  workerStarting: {
    when: 'runs, and its worker is being started (a start, a new configuration), waits for its sources to be live, or comes back after it ended',
    to: 'building',
  },
  workerFailed: {
    when: 'runs, and its worker cannot be started, or ended repeatedly without becoming ready',
    to: 'error',
  },
  stopAsked: { when: 'does not run, and its worker is still there', to: 'stopping' },
  workerGone: { when: 'does not run, and its worker is gone', to: 'paused' },
} as const satisfies Record<string, AutomaticMove<ConnectorState>>;
export type ConnectorMove = keyof typeof CONNECTOR_MOVES;

/** Spec 3.3: a warehouse is Draft until its first connection test. */
export const WAREHOUSE_INITIAL_STATE: WarehouseState = 'Draft';

/**
 * Spec 3.3: every move is a connection test's verdict, whoever ran it (POST
 * /warehouses/{id}/test, or the operator on a change of the connection
 * settings: operator/src/reconcile/warehouse/).
 */
export const WAREHOUSE_MOVES = {
  testPassed: { when: 'a connection test passes', to: 'Live' },
  testFailed: { when: 'a connection test fails', to: 'Error' },
} as const satisfies Record<string, AutomaticMove<WarehouseState>>;

/** The next state, or undefined when the call is not allowed in `state`. */
export function nextState<S extends string>(transition: Transition<S>, state: S): S | undefined {
  return (transition.from as readonly string[]).includes(state) ? transition.to : undefined;
}
