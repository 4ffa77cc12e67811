import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION } from '@sluice/shared';
import type { ObjectRef } from '../reconcile/actions.js';
import type { EventRecorder } from './events.js';
import type { Logger } from './logger.js';

/**
 * Transitions as Kubernetes Events on the object (`kubectl describe` shows
 * them). An Event that cannot be written is logged, never fatal: it must not
 * stop a reconcile.
 */
export class KubernetesEventRecorder implements EventRecorder {
  private readonly api: CoreV1Api;

  constructor(
    kubeConfig: KubeConfig,
    private readonly component: string,
    private readonly log: Logger,
  ) {
    this.api = kubeConfig.makeApiClient(CoreV1Api);
  }

  async record(ref: ObjectRef, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    const now = new Date();
    try {
      await this.api.createNamespacedEvent({
        namespace: ref.namespace,
        body: {
          metadata: { generateName: `${ref.name}.`, namespace: ref.namespace },
          involvedObject: {
            apiVersion: `${API_GROUP}/${API_VERSION}`,
            kind: ref.kind,
            name: ref.name,
            namespace: ref.namespace,
          },
          type,
          reason,
          message: message.slice(0, 1024),
          source: { component: this.component },
          firstTimestamp: now,
          lastTimestamp: now,
          count: 1,
        },
      });
    } catch (err) {
      this.log.warn({ err: (err as Error).message, ...ref, reason }, 'could not record an event');
    }
  }
}
