import { CAPTURE_DROPPED, type ConnectorResource } from '@sluice/shared/catalog';
import { cdcNames, connectorType, isSecretRef, secretPaths } from '@sluice/shared/connectors';
import {
  ConflictError,
  managedSecretName,
  NotFoundError,
  SLUICE_KINDS,
  type ClusterObject,
  type ClusterPort,
  type SecretStorePort,
} from '@sluice/shared/ports';
import { isObjectSecret, secretSlots } from '@sluice/shared/secrets';
import { API_GROUP } from '@sluice/shared/util';
import { positionTopic } from '@sluice/dataplane';
import {
  POSITION_TOPIC_TYPES,
  prepareCaptureRelease,
  type CaptureReleaseContext,
} from '../features/connectors/connectors.capture-release.js';

// What `helm uninstall` does after the control plane and the workers stopped
// (operator/src/uninstall/stop-workers.ts runs first; charts/sluice/README.md,
// "Uninstalling"), in this order:
// 1. the captures of database sources are released, as a deleted connector's
//    are, unless turned off: a PostgreSQL source's slot and publication are
//    dropped (a slot nobody reads keeps the user's WAL for ever), a MySQL or
//    MariaDB source's position topic is deleted from the platform broker;
// 2. the managed Secrets of the worker namespace are deleted, apart from the
//    one of a source whose slot could not be dropped (a new run needs it to
//    try again); users' own Secrets and the control plane's stay;
// 3. Sluice's finalizers are removed from every sluice.dev object of the
//    watched namespaces, so deleting one later completes without an
//    operator. The objects themselves stay, as the CRDs do.
// Finalizers go last: a connector already being deleted disappears with its
// finalizer, and its slot must be dropped before. Safe to run again: a source
// whose configuration points at its managed Secret, and that Secret is gone,
// was released by an earlier run (a failed release keeps the Secret), and
// without its password there is nothing to connect with anyway.

/** Drops a connector's capture: `CAPTURE_DROPPED`, the sentence saying why not, or undefined (none to drop). */
export type CaptureReleaser = (c: ConnectorResource) => Promise<string | undefined>;

/** The gateway's capture release of a deleted connector, for every database source. */
export function captureReleaser(ctx: CaptureReleaseContext): CaptureReleaser {
  return async (c) =>
    (
      await prepareCaptureRelease(ctx, {
        id: c.metadata.name,
        connector_type: c.spec.connectorType,
        spec: c.spec,
      })
    )();
}

export interface CleanupOptions {
  /** An adapter for one namespace (undefined: every namespace). */
  clusterFor(namespace: string | undefined): ClusterPort;
  /** The watched namespaces; undefined: every namespace (cluster scope). */
  namespaces: readonly string[] | undefined;
  secretStore: SecretStorePort;
  workerNamespace: string;
  /** Absent: slots are kept (`uninstall.releaseCaptures: false`). */
  releaseCapture?: CaptureReleaser;
}

export interface CaptureFailure {
  connector: string;
  /** A PostgreSQL source's replication slot, or a MySQL/MariaDB source's position topic. */
  capture: { slot: string } | { topic: string };
  reason: string;
}

export interface CleanupReport {
  /** Slots dropped (or already absent), by name. */
  slotsReleased: string[];
  /** Slots released by an earlier run (their managed Secret is gone). */
  slotsAlreadyReleased: string[];
  /** Slots of PostgreSQL sources left in place because releasing is off. */
  slotsKept: string[];
  /** Position topics of MySQL and MariaDB sources deleted (or already absent), by name. */
  topicsDeleted: string[];
  /** Position topics left in place because releasing is off. */
  topicsKept: string[];
  captureFailures: CaptureFailure[];
  secretsDeleted: number;
  /** Managed Secrets kept for a new run (their source's slot is still there). */
  secretsKept: string[];
  /** Objects whose Sluice finalizers were removed. */
  finalizersRemoved: number;
  /** sluice.dev objects left in place (the users' definitions). */
  objectsKept: number;
}

/** At most this many captures are released at once. */
const PARALLEL_RELEASES = 4;

const isSluiceFinalizer = (f: string) => f.startsWith(`${API_GROUP}/`);

export async function cleanUpAfterWorkers(opts: CleanupOptions): Promise<CleanupReport> {
  const report: CleanupReport = {
    slotsReleased: [],
    slotsAlreadyReleased: [],
    slotsKept: [],
    topicsDeleted: [],
    topicsKept: [],
    captureFailures: [],
    secretsDeleted: 0,
    secretsKept: [],
    finalizersRemoved: 0,
    objectsKept: 0,
  };
  const places = opts.namespaces ?? [undefined];
  const listAll = async <T extends ClusterObject>(kind: (typeof SLUICE_KINDS)[number]) =>
    (await Promise.all(places.map(async (ns) => (await opts.clusterFor(ns).list<T>(kind, ns)).items))).flat();

  const connectors = await listAll<ConnectorResource>('Connector');
  const typeOf = (c: ConnectorResource) => connectorType(c.spec.connectorType)?.type ?? '';
  const sources = connectors.filter((c) => typeOf(c) === 'POSTGRES_SOURCE');
  const topicSources = connectors.filter((c) => POSITION_TOPIC_TYPES.has(typeOf(c)));
  const slotOf = (c: ConnectorResource) =>
    cdcNames(c.metadata.name, c.spec.configuration as { slot_name?: string }).slot;
  const managed = (await opts.secretStore.list(opts.workerNamespace)).filter(isObjectSecret);
  const release = opts.releaseCapture;
  const topicOf = (c: ConnectorResource) => positionTopic(c.metadata.name);
  if (!release) report.topicsKept.push(...topicSources.map(topicOf));
  else {
    // No secret is needed to delete a topic, and deleting one that is gone is done: every run tries.
    await releaseAll(
      release,
      topicSources,
      report,
      (c) => ({ topic: topicOf(c) }),
      (c) => report.topicsDeleted.push(topicOf(c)),
    );
  }
  if (!release) report.slotsKept.push(...sources.map(slotOf));
  else {
    const present = new Set(managed.map((m) => m.name));
    const done = (c: ConnectorResource) => {
      const own = managedSecretName('connector', c.metadata.name);
      return !present.has(own) && referencesSecret(c, own);
    };
    report.slotsAlreadyReleased.push(...sources.filter(done).map(slotOf));
    const todo = sources.filter((c) => !done(c));
    await releaseAll(
      release,
      todo,
      report,
      (c) => ({ slot: slotOf(c) }),
      (c) => report.slotsReleased.push(slotOf(c)),
    );
  }

  // A slot's source needs its password to be dropped by a new run; a topic needs none.
  const retry = new Set(
    report.captureFailures
      .filter((f) => 'slot' in f.capture)
      .map((f) => managedSecretName('connector', f.connector.split('/')[1] ?? '')),
  );
  for (const secret of managed) {
    if (retry.has(secret.name)) report.secretsKept.push(secret.name);
    else if (await opts.secretStore.delete(opts.workerNamespace, secret.name)) report.secretsDeleted++;
  }

  for (const kind of SLUICE_KINDS) {
    for (const object of await listAll(kind)) {
      if (await removeSluiceFinalizers(opts.clusterFor(object.metadata.namespace), object))
        report.finalizersRemoved++;
    }
  }
  // Counted after: objects that were being deleted are gone with their finalizer.
  for (const kind of SLUICE_KINDS) report.objectsKept += (await listAll(kind)).length;
  return report;
}

/**
 * Releases the connectors' captures, PARALLEL_RELEASES at a time: `released`
 * for each one dropped, a failure (naming `capture`) for each that could not be.
 */
async function releaseAll(
  release: CaptureReleaser,
  connectors: readonly ConnectorResource[],
  report: CleanupReport,
  capture: (c: ConnectorResource) => CaptureFailure['capture'],
  released: (c: ConnectorResource) => void,
): Promise<void> {
  for (let i = 0; i < connectors.length; i += PARALLEL_RELEASES) {
    await Promise.all(
      connectors.slice(i, i + PARALLEL_RELEASES).map(async (c) => {
        const outcome = await release(c).catch((e: unknown) => (e instanceof Error ? e.message : String(e)));
        if (outcome === CAPTURE_DROPPED) released(c);
        else if (outcome !== undefined)
          report.captureFailures.push({
            connector: `${c.metadata.namespace}/${c.metadata.name}`,
            capture: capture(c),
            reason: outcome,
          });
      }),
    );
  }
}

function referencesSecret(c: ConnectorResource, name: string): boolean {
  return secretSlots(c.spec.configuration, secretPaths(c.spec.connectorType)).some(
    (slot) => isSecretRef(slot.value) && slot.value.valueFrom.secretKeyRef.name === name,
  );
}

/** True when the object had Sluice finalizers and no longer has them; other finalizers stay. */
async function removeSluiceFinalizers(cluster: ClusterPort, object: ClusterObject): Promise<boolean> {
  let current: ClusterObject | undefined = object;
  for (let attempt = 0; current; attempt++) {
    const finalizers = current.metadata.finalizers ?? [];
    if (!finalizers.some(isSluiceFinalizer)) return false;
    try {
      await cluster.update({
        ...current,
        metadata: { ...current.metadata, finalizers: finalizers.filter((f) => !isSluiceFinalizer(f)) },
      });
      return true;
    } catch (e) {
      if (e instanceof NotFoundError) return false;
      // Another writer (a controller of the user's) was quicker: read it again.
      if (!(e instanceof ConflictError) || attempt >= 4) throw e;
      current = await cluster.get(object.kind, object.metadata.namespace, object.metadata.name);
    }
  }
  return false;
}
