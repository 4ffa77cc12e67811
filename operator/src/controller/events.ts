import type { ObjectRef } from '../reconcile/actions.js';
import type { Logger } from './logger.js';

/** Where transitions are reported: Kubernetes Events, or the log on one machine. */
export interface EventRecorder {
  record(ref: ObjectRef, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void>;
}

export class LogEventRecorder implements EventRecorder {
  constructor(private readonly log: Logger) {}
  async record(ref: ObjectRef, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    const fields = { kind: ref.kind, namespace: ref.namespace, name: ref.name, reason, event: message };
    if (type === 'Warning') this.log.warn(fields, 'event');
    else this.log.info(fields, 'event');
  }
}
