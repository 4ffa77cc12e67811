import { createHash } from 'node:crypto';
import {
  CONNECTOR_MOVES,
  effectiveConnectorState,
  CONNECTOR_LABEL,
  RESTART_ANNOTATION,
  scalesOut,
  singleReaderReason,
  sourceWorkerConfig,
  targetWorkerConfig,
  type ConnectorResource,
  type ConnectorMove,
  type DataModelResource,
  type PipelineResource,
  type SubscriptionResource,
  type WorkerConfig,
  WORKER_FINALIZER,
  withEffectiveEnabled,
  workerReplicas,
} from '@sluice/shared/catalog';
import { connectorType, isSecretRef } from '@sluice/shared/connectors';
import { managedSecretName, type WorkerObservation, type WorkerSpec, workerId } from '@sluice/shared/ports';
import { type Action, type ObjectRef, type Plan } from '../actions.js';
import type { ConditionValue } from '../conditions.js';
import { binlogRetentionCondition } from '../binlog-retention.js';
import { slotRetentionCondition } from '../slot-retention.js';
import { stateStatusActions } from '../state-status.js';
import { captureReleaseStep } from './capture-release.js';
import { notReadyState, withWorkerStatus } from './worker-status.js';

/** What the connector reconciler sees: the object, what feeds its worker, and the worker. */
export interface ConnectorInput {
  connector: ConnectorResource;
  /** Source connectors: their data models. */
  datamodels: DataModelResource[];
  /**
   * Target connectors: the subscriptions delivered to them, each with its
   * data model and source, and the pipelines that use the subscription
   * (whether it is delivered is its effective state, effective-state.ts).
   */
  subscriptions: {
    subscription: SubscriptionResource;
    datamodel: DataModelResource;
    source: ConnectorResource;
    pipelines?: PipelineResource[];
  }[];
  /** The pipelines whose source or target it is: they decide, with its spec, whether it runs. */
  pipelines?: PipelineResource[];
  worker: WorkerObservation | undefined;
  /** Where managed Secrets live (the worker namespace); unset: the operator leaves Secrets alone. */
  secretNamespace?: string;
  /**
   * The namespace of the connectors whose managed Secret is theirs by name
   * (the control plane's, where the API creates them); default `secretNamespace`.
   */
  homeNamespace?: string;
  /** Retained WAL of the replication slot past which the connector is Degraded; unset: never. */
  slotWalDegradedBytes?: number;
  /** How long a PostgreSQL source being deleted waits for the gateway to drop its slot; unset: not at all. */
  captureReleaseTimeoutMs?: number;
  now: string;
}

/** Whether a configuration holds a reference to the Secret `name`. */
function references(value: unknown, name: string): boolean {
  if (isSecretRef(value)) return value.valueFrom.secretKeyRef.name === name;
  if (Array.isArray(value)) return value.some((v) => references(v, name));
  if (value && typeof value === 'object') return Object.values(value).some((v) => references(v, name));
  return false;
}

/**
 * The label selector of a connector's worker pods (the scale subresource's
 * `status.selector`): the runtime's own label and the connector's, which
 * `ensureWorker` gives every pod of it.
 */
export function workerSelector(c: ConnectorResource): string {
  return `app.kubernetes.io/managed-by=sluice-operator,${CONNECTOR_LABEL}=${c.metadata.name}`;
}

/**
 * Degraded while a source is asked for more than one worker (a spec written
 * where the CRD's rule did not run): it runs one, and says why.
 */
function singleReaderCondition(c: ConnectorResource): ConditionValue | undefined {
  if (scalesOut(c.spec.connectorType) || (c.spec.replicas ?? 1) === 1) return undefined;
  return {
    status: 'True',
    reason: 'SingleReader',
    message: `spec.replicas is ${c.spec.replicas}, running 1 worker. ${singleReaderReason(c.spec.connectorType)}`,
  };
}

/** The worker the connector runs: its configuration, hash and replica count. */
function workerSpec(c: ConnectorResource, config: WorkerConfig, hash: string): WorkerSpec {
  return {
    id: workerId(c.metadata.namespace, c.metadata.name),
    namespace: c.metadata.namespace,
    config: config as unknown as Record<string, unknown>,
    configHash: hash,
    replicas: workerReplicas(c.spec),
    scalesOut: scalesOut(c.spec.connectorType),
    labels: { [CONNECTOR_LABEL]: c.metadata.name },
    ...(c.metadata.uid
      ? { owner: { apiVersion: c.apiVersion, kind: 'Connector', name: c.metadata.name, uid: c.metadata.uid } }
      : {}),
  };
}

/** While a target waits for its sources, look again this often (sources are also watched). */
export const WAIT_FOR_SOURCE_MS = 5000;

export function connectorRef(c: ConnectorResource): ObjectRef {
  return { kind: 'Connector', namespace: c.metadata.namespace, name: c.metadata.name };
}

/**
 * The latest start request that applies to the connector: its own, a running
 * pipeline's that runs it, or the one its worker was last started for
 * (status.restartRequestedAt), whichever is latest. It never goes back, so a
 * pipeline that shared the connector being paused or deleted restarts nothing.
 */
export function restartRequest(input: ConnectorInput): string {
  const c = input.connector;
  const requested = effectiveConnectorState(c, input.pipelines ?? []).restartRequestedAt;
  const recorded = c.status?.restartRequestedAt ?? '';
  // Before effective states, a pipeline copied its request onto the connector's annotation.
  const own = c.metadata.annotations?.[RESTART_ANNOTATION] ?? '';
  return [recorded, own, requested].reduce((a, b) => (Date.parse(b) > Date.parse(a) || !a ? b : a), '');
}

/** The worker configuration and its hash (configuration + the last restart request). */
export function connectorWorker(input: ConnectorInput): { config: WorkerConfig; hash: string } {
  const c = input.connector;
  const config =
    connectorType(c.spec.connectorType)?.direction === 'target'
      ? targetWorkerConfig(
          c,
          input.subscriptions.map((s) => ({
            ...s,
            subscription: withEffectiveEnabled(s.subscription, s.pipelines ?? []),
          })),
        )
      : sourceWorkerConfig(c, input.datamodels);
  const restart = restartRequest(input);
  const hash = createHash('sha256')
    .update(JSON.stringify(config))
    .update('\0')
    .update(restart)
    .digest('hex')
    .slice(0, 16);
  return { config, hash };
}

/**
 * Spec 3.2 as a pure function: each reconcile picks one of the automatic
 * moves of CONNECTOR_MOVES (shared/src/catalog/states.ts), whose state it
 * writes. Whether it runs is its effective state (its
 * own desiredState and the pipelines that use it, effective-state.ts), shown
 * in status.effectiveState with the reason; its spec is never written.
 * Effective `running`: the worker runs with the
 * current configuration (a changed data model or subscription changes the
 * hash, so the worker restarts); `building` until the worker is ready, then
 * `live`; a worker that ends is restarted by its runtime with kubelet's
 * back-off, `building` meanwhile, and `error` with how it ended once it
 * failed to become ready too many times in a row (worker-status.ts). A target waits
 * for the sources it reads to be live (source before target). Effective
 * `stopped`: `stopping` while the worker is there, then `paused`. Deletion:
 * the worker goes, then its data models (as the garbage collector does with
 * their ownerReferences on a real cluster), then the finalizer.
 */
export function planConnector(input: ConnectorInput): Plan {
  const c = input.connector;
  const ref = connectorRef(c);
  const actions: Action[] = [];
  const finalizers = c.metadata.finalizers ?? [];
  const worker = input.worker;

  if (c.metadata.deletionTimestamp) {
    if (worker)
      return { actions: [{ type: 'stopWorker', id: workerId(c.metadata.namespace, c.metadata.name) }] };
    // The gateway drops a PostgreSQL source's slot with the Secret's values (both stay until then),
    // and a MySQL/MariaDB source's position topic.
    const release = captureReleaseStep(c, input.now, input.captureReleaseTimeoutMs);
    if ('wait' in release) return { actions: [], requeueAfterMs: release.wait };
    if (release.warning) {
      actions.push({
        type: 'event',
        ref,
        eventType: 'Warning',
        reason: release.reason ?? 'CaptureLeft',
        message: release.warning,
      });
    }
    // Its data models go with it, whoever deletes it (kubectl or the API):
    // the API server's garbage collector would do it through their
    // ownerReferences, but only where a kube-controller-manager runs.
    for (const d of input.datamodels) {
      if (!d.metadata.deletionTimestamp) {
        actions.push({
          type: 'delete',
          ref: { kind: 'DataModel', namespace: d.metadata.namespace, name: d.metadata.name },
        });
      }
    }
    // Its managed Secret goes before the finalizer: a connector deleted with
    // kubectl leaves no secret behind (the gateway's own delete does the same).
    const secret = managedSecretName('connector', c.metadata.name);
    const home = input.homeNamespace ?? input.secretNamespace;
    if (
      input.secretNamespace !== undefined &&
      c.metadata.namespace === home &&
      references(c.spec.configuration, secret)
    ) {
      actions.push({ type: 'deleteSecret', namespace: input.secretNamespace, name: secret });
    }
    if (finalizers.includes(WORKER_FINALIZER)) {
      actions.push({
        type: 'patch',
        ref,
        patch: { metadata: { finalizers: finalizers.filter((f) => f !== WORKER_FINALIZER) } },
      });
    }
    return { actions };
  }
  if (!finalizers.includes(WORKER_FINALIZER)) {
    actions.push({
      type: 'patch',
      ref,
      patch: { metadata: { finalizers: [...finalizers, WORKER_FINALIZER] } },
    });
  }

  let move: ConnectorMove;
  let message = '';
  let requeueAfterMs: number | undefined;
  const effective = effectiveConnectorState(c, input.pipelines ?? []);
  const restartRequestedAt = restartRequest(input);
  // Built once: the configuration's hash serves the plan and the worker status below.
  const built = effective.state === 'running' ? connectorWorker(input) : undefined;
  if (built) {
    const { config, hash } = built;
    const waitingFor = input.subscriptions
      .map((s) => s.source)
      .filter((s) => s.status?.state !== 'live')
      .map((s) => s.spec.name);
    const notReady =
      worker && worker.configHash === hash ? notReadyState(worker, c.status?.worker) : undefined;
    // A new replica count for the running configuration: instances added or
    // removed, none restarted (replicas are not part of the hash).
    if (worker && worker.configHash === hash && (worker.replicas ?? 1) !== workerReplicas(c.spec)) {
      actions.push({ type: 'ensureWorker', spec: workerSpec(c, config, hash) });
    }
    if (worker && worker.configHash === hash && worker.phase === 'ready') {
      move = 'workerReady';
    } else if (notReady) {
      ({ move, message } = notReady);
    } else if (!worker || worker.configHash !== hash) {
      if (waitingFor.length > 0 && !worker) {
        move = 'workerStarting';
        message = `Waiting for source ${[...new Set(waitingFor)].sort().join(', ')} to be live`;
        requeueAfterMs = WAIT_FOR_SOURCE_MS;
      } else {
        move = 'workerStarting';
        message = worker ? 'Restarting the worker with a new configuration' : 'Starting the worker';
        actions.push({ type: 'ensureWorker', spec: workerSpec(c, config, hash) });
      }
    } else {
      move = 'workerStarting';
      message = 'Waiting for the worker to be ready';
    }
  } else if (worker) {
    move = 'stopAsked';
    message = 'Stopping the worker';
    if (worker.phase !== 'stopping')
      actions.push({ type: 'stopWorker', id: workerId(c.metadata.namespace, c.metadata.name) });
  } else {
    move = 'workerGone';
  }

  const state = CONNECTOR_MOVES[move].to;
  const degraded =
    slotRetentionCondition(c.status?.replicationSlot, input.slotWalDegradedBytes) ??
    binlogRetentionCondition(c) ??
    singleReaderCondition(c);
  actions.push(
    ...withWorkerStatus(
      stateStatusActions(ref, c.status, state, message, c.metadata.generation ?? 0, input.now, degraded, {
        effectiveState: effective.state,
        effectiveReason: effective.reason,
        restartRequestedAt: restartRequestedAt || undefined,
        // The scale subresource's: ready workers of the current configuration, and their pods.
        replicas: built && worker?.configHash === built.hash ? (worker.readyReplicas ?? readyOf(worker)) : 0,
        selector: workerSelector(c),
      }),
      ref,
      c.status?.worker,
      built ? worker : undefined,
      built?.hash,
    ),
  );
  return { actions, ...(requeueAfterMs !== undefined ? { requeueAfterMs } : {}) };
}

/** Ready instances of a runtime that does not count them: one when ready. */
function readyOf(worker: WorkerObservation): number {
  return worker.phase === 'ready' ? 1 : 0;
}
