import { createHash } from 'node:crypto';
import type {
  V1Container,
  V1Deployment,
  V1DeploymentSpec,
  V1EnvVar,
  V1PodTemplateSpec,
} from '@kubernetes/client-node';
import { parseWorkerId, type WorkerSpec } from '@sluice/shared/ports';
import { secretEnvName, secretRefsIn, type SecretKeyRef } from '@sluice/shared/secrets';
import { WORKER_PROGRAM } from './worker-program.js';

// The Deployment of one worker, as a pure function of the worker spec and the
// pod template the chart hands the operator (image, service account,
// security context, resources, scheduling: the chart's decisions, not ours).
// What the operator adds is the worker contract: the configuration as a file,
// the secret references as environment variables, the port, the probes and
// the termination message.

export const WORKER_LABEL = 'sluice.dev/worker';
export const CONFIG_HASH_ANNOTATION = 'sluice.dev/config-hash';
/** The chart's pod template the Deployment was made from: a `helm upgrade` that changes it (a new image) rolls the workers. */
export const POD_TEMPLATE_HASH_ANNOTATION = 'sluice.dev/pod-template-hash';
export const WORKER_ID_ANNOTATION = 'sluice.dev/worker-id';
export const CONFIG_ANNOTATION = 'sluice.dev/worker-config';
export const MANAGED_BY = { 'app.kubernetes.io/managed-by': 'sluice-operator' };
/** What selects every worker Deployment and pod of this operator. */
export const WORKER_SELECTOR = 'app.kubernetes.io/managed-by=sluice-operator,sluice.dev/worker';

export const WORKER_CONTAINER = 'worker';
export const WORKER_PORT = 8081;
const CONFIG_DIR = '/etc/sluice-worker';
const TERMINATION_LOG = '/dev/termination-log';

/** The pod template used outside the chart (development): the image and nothing else. */
export function defaultPodTemplate(image: string): V1PodTemplateSpec {
  return {
    metadata: {},
    spec: {
      containers: [{ name: WORKER_CONTAINER, image, args: [WORKER_PROGRAM] }],
    },
  };
}

/**
 * `sluice-worker-<name>` for a connector of the home namespace (the control
 * plane's, DeploymentWorkersOptions.homeNamespace), `sluice-worker-<namespace>-<name>`
 * otherwise; shortened with a hash past 63 characters, since the name is
 * also a label value.
 */
export function deploymentName(id: string, homeNamespace: string): string {
  const { namespace, name } = parseWorkerId(id);
  const full = `sluice-worker-${namespace === homeNamespace ? '' : `${namespace}-`}${name}`
    .toLowerCase()
    .replace(/[^a-z0-9-]/g, '-');
  if (full.length <= 63) return full;
  const hash = createHash('sha256').update(id).digest('hex').slice(0, 10);
  return `${full.slice(0, 52).replace(/-+$/, '')}-${hash}`;
}

const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/** Keeps the labels Kubernetes accepts; a value it would refuse becomes a hash of itself. */
function labelsFrom(labels: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(labels ?? {})) {
    out[k] =
      v.length <= 63 && LABEL_VALUE.test(v) ? v : createHash('sha256').update(v).digest('hex').slice(0, 40);
  }
  return out;
}

/**
 * The replica count and update strategy, which a scale change rewrites
 * without touching the pod template (so no running pod is replaced). A
 * source has one reader: the old pod is gone before the new one starts. A
 * target's pods share one consumer group, so a new configuration rolls one
 * new pod in at a time before an old one goes.
 */
export function scaleOf(spec: WorkerSpec): Pick<V1DeploymentSpec, 'replicas' | 'strategy'> {
  if (!spec.scalesOut) return { replicas: 1, strategy: { type: 'Recreate' } };
  return {
    replicas: spec.replicas ?? 1,
    strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
  };
}

/** A short hash of the pod template the chart hands the operator. */
export function podTemplateHash(template: V1PodTemplateSpec): string {
  return createHash('sha256').update(JSON.stringify(template)).digest('hex').slice(0, 16);
}

export function workerDeployment(
  spec: WorkerSpec,
  template: V1PodTemplateSpec,
  runtimeNamespace: string,
  /** The references given to the worker (the granted ones: DeploymentRuntimeOptions.grantedRefs); all by default. */
  refs: SecretKeyRef[] = secretRefsIn(spec.config),
  /** deploymentName's home namespace; default `runtimeNamespace`. */
  homeNamespace = runtimeNamespace,
): V1Deployment {
  const name = deploymentName(spec.id, homeNamespace);
  const selector = { ...MANAGED_BY, [WORKER_LABEL]: name };
  const labels = { ...labelsFrom(spec.labels), ...selector };
  const annotations = {
    [CONFIG_HASH_ANNOTATION]: spec.configHash,
    [POD_TEMPLATE_HASH_ANNOTATION]: podTemplateHash(template),
    [WORKER_ID_ANNOTATION]: spec.id,
  };
  const templateSpec = template.spec ?? { containers: [] };
  const containers = templateSpec.containers.length
    ? templateSpec.containers
    : [{ name: WORKER_CONTAINER } as V1Container];
  const index = Math.max(
    0,
    containers.findIndex((c) => c.name === WORKER_CONTAINER),
  );
  const base = containers[index] as V1Container;
  const env: V1EnvVar[] = [
    ...(base.env ?? []),
    { name: 'SLUICE_WORKER_ID', value: spec.id },
    // Its log lines say which pod wrote them: a worker of several replicas has one log for all.
    { name: 'SLUICE_WORKER_INSTANCE', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    { name: 'SLUICE_WORKER_CONFIG', value: `${CONFIG_DIR}/config.json` },
    { name: 'SLUICE_WORKER_HOST', value: '0.0.0.0' },
    { name: 'SLUICE_WORKER_PORT', value: String(WORKER_PORT) },
    { name: 'SLUICE_TERMINATION_MESSAGE_PATH', value: TERMINATION_LOG },
    ...refs.map((ref) => ({
      name: secretEnvName(ref),
      valueFrom: { secretKeyRef: { name: ref.name, key: ref.key } },
    })),
  ];
  const probe = (path: string, periodSeconds: number, failureThreshold: number) => ({
    httpGet: { path, port: 'http' },
    periodSeconds,
    failureThreshold,
    timeoutSeconds: 2,
  });
  const worker: V1Container = {
    ...base,
    name: base.name || WORKER_CONTAINER,
    env,
    ports: [{ name: 'http', containerPort: WORKER_PORT, protocol: 'TCP' }],
    readinessProbe: probe('/readyz', 5, 1),
    livenessProbe: { ...probe('/healthz', 10, 3), initialDelaySeconds: 10 },
    terminationMessagePath: TERMINATION_LOG,
    // The worker's own error line only, as under the process runtime: a worker
    // killed without writing one has no message (its last log line is no cause).
    terminationMessagePolicy: 'File',
    volumeMounts: [
      ...(base.volumeMounts ?? []),
      { name: 'sluice-worker-config', mountPath: CONFIG_DIR, readOnly: true },
    ],
  };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name,
      namespace: runtimeNamespace,
      labels,
      annotations,
      // Owner references cannot cross namespaces; the finalizer removes the others.
      ...(spec.owner && spec.namespace === runtimeNamespace
        ? { ownerReferences: [{ ...spec.owner, controller: true, blockOwnerDeletion: true }] }
        : {}),
    },
    spec: {
      ...scaleOf(spec),
      revisionHistoryLimit: 2,
      selector: { matchLabels: selector },
      template: {
        metadata: {
          ...template.metadata,
          labels: { ...template.metadata?.labels, ...labels },
          annotations: {
            ...template.metadata?.annotations,
            ...annotations,
            // The configuration holds references only, never a secret value; it
            // reaches the worker as a file through the downward API.
            [CONFIG_ANNOTATION]: JSON.stringify(spec.config),
          },
        },
        spec: {
          ...templateSpec,
          containers: containers.map((c, i) => (i === index ? worker : c)),
          volumes: [
            ...(templateSpec.volumes ?? []),
            {
              name: 'sluice-worker-config',
              downwardAPI: {
                items: [
                  {
                    path: 'config.json',
                    fieldRef: { fieldPath: `metadata.annotations['${CONFIG_ANNOTATION}']` },
                  },
                ],
              },
            },
          ],
        },
      },
    },
  };
}
