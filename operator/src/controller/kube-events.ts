import { CoreV1Api, type CoreV1Event as CoreV1EventBody, type KubeConfig } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION } from '@sluice/shared/util';
import type { ObjectRef } from '../reconcile/actions.js';
import type { EventRecorder } from './events.js';
import type { Logger } from './logger.js';

/**
 * Transitions as Kubernetes Events on the object (`kubectl describe` shows
 * them). Like client-go's event broadcaster, recording does not wait for the
 * API server: a reconcile queues its Event and goes on, a few senders write
 * them, and past `maxQueued` the oldest are dropped (logged). An Event that
 * cannot be written is logged, never fatal.
 */
export class KubernetesEventRecorder implements EventRecorder {
  private readonly api: CoreV1Api;
  private readonly queue: CoreV1EventBody[] = [];
  private sending = 0;
  private idle: (() => void)[] = [];

  constructor(
    kubeConfig: KubeConfig,
    private readonly component: string,
    private readonly log: Logger,
    private readonly options: { senders?: number; maxQueued?: number } = {},
  ) {
    this.api = kubeConfig.makeApiClient(CoreV1Api);
  }

  async record(ref: ObjectRef, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    const now = new Date();
    this.queue.push({
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
    });
    if (this.queue.length > (this.options.maxQueued ?? 1000)) {
      const dropped = this.queue.shift();
      this.log.warn(
        { name: dropped?.involvedObject.name, reason: dropped?.reason },
        'event queue full; dropped an event',
      );
    }
    while (this.sending < (this.options.senders ?? 2) && this.queue.length > 0) void this.send();
  }

  /** Resolves once every queued Event was sent (shutdown, tests). */
  flush(): Promise<void> {
    if (this.sending === 0 && this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  private async send(): Promise<void> {
    this.sending++;
    for (let body = this.queue.shift(); body; body = this.queue.shift()) {
      try {
        await this.api.createNamespacedEvent({ namespace: body.metadata!.namespace!, body });
      } catch (err) {
        const { name, kind, namespace } = body.involvedObject;
        this.log.warn(
          { err: (err as Error).message, kind, namespace, name, reason: body.reason },
          'could not record an event',
        );
      }
    }
    this.sending--;
    if (this.sending === 0) for (const resolve of this.idle.splice(0)) resolve();
  }
}
