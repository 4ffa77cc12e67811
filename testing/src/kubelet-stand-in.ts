import { randomUUID } from 'node:crypto';
import {
  AppsV1Api,
  CoreV1Api,
  type KubeConfig,
  type V1ContainerState,
  type V1Deployment,
  type V1Pod,
} from '@kubernetes/client-node';

// The test API server runs without kube-controller-manager, scheduler or
// kubelet, so nothing turns a Deployment into running pods. These helpers do
// what those components would write — the Deployment's status and a pod of
// its template with container statuses — through the same API the real
// components use, so the operator under test reads exactly what it reads in
// a cluster (docs/testing-kubernetes.md).

export interface PodState {
  ready: boolean;
  restartCount?: number;
  state?: V1ContainerState;
  lastState?: V1ContainerState;
}

export class KubeletStandIn {
  readonly apps: AppsV1Api;
  readonly core: CoreV1Api;

  constructor(
    kc: KubeConfig,
    readonly namespace: string,
    /** The node its pods run on (KubeletLogServer.registerNode makes one that serves their logs). */
    readonly nodeName = 'node-1',
  ) {
    this.apps = kc.makeApiClient(AppsV1Api);
    this.core = kc.makeApiClient(CoreV1Api);
  }

  deployment(name: string): Promise<V1Deployment> {
    return this.apps.readNamespacedDeployment({ name, namespace: this.namespace });
  }

  /** The deployment controller's view: its current template rolled out, `ready` replicas ready. */
  async rollOut(name: string, ready: number): Promise<void> {
    const d = await this.deployment(name);
    d.status = {
      observedGeneration: d.metadata?.generation ?? 1,
      replicas: 1,
      updatedReplicas: 1,
      readyReplicas: ready,
      availableReplicas: ready,
      unavailableReplicas: 1 - ready,
    };
    await this.apps.replaceNamespacedDeploymentStatus({ name, namespace: this.namespace, body: d });
  }

  /** A pod of the Deployment's current template, on a node, with this container status. */
  async runPod(deployment: string, state: PodState): Promise<V1Pod> {
    const d = await this.deployment(deployment);
    const template = d.spec!.template;
    const pod = await this.core.createNamespacedPod({
      namespace: this.namespace,
      body: {
        metadata: {
          name: `${deployment}-${randomUUID().slice(0, 5)}`,
          labels: template.metadata?.labels,
          annotations: template.metadata?.annotations,
        },
        spec: { ...template.spec!, nodeName: this.nodeName },
      },
    });
    return this.setPod(pod, state);
  }

  async setPod(pod: V1Pod, state: PodState): Promise<V1Pod> {
    const current = await this.core.readNamespacedPod({
      name: pod.metadata!.name!,
      namespace: this.namespace,
    });
    const container = current.spec!.containers[0]!;
    current.status = {
      phase: 'Running',
      containerStatuses: [
        {
          name: container.name,
          image: container.image ?? '',
          imageID: '',
          ready: state.ready,
          restartCount: state.restartCount ?? 0,
          state: state.state ?? { running: { startedAt: new Date() } },
          ...(state.lastState ? { lastState: state.lastState } : {}),
        },
      ],
    };
    return this.core.replaceNamespacedPodStatus({
      name: current.metadata!.name!,
      namespace: this.namespace,
      body: current,
    });
  }

  /** The garbage collector and kubelet after a Deployment went: its pods go too. */
  async removePods(deployment: string): Promise<void> {
    await this.core.deleteCollectionNamespacedPod({
      namespace: this.namespace,
      labelSelector: `sluice.dev/worker=${deployment}`,
      gracePeriodSeconds: 0,
    });
  }
}
