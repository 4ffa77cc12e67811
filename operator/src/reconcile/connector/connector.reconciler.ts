import {
  type ConnectorResource,
  type DataModelResource,
  type PipelineResource,
  type SubscriptionResource,
} from '@sluice/shared/catalog';
import { workerId, type WorkerRuntimePort } from '@sluice/shared/ports';
import { objectRef, refOf, type CacheView, type Reconciler } from '../reconciler.js';
import { planConnector, type ConnectorInput } from './connector.plan.js';

export interface ConnectorReconcilerOptions {
  /** Where its worker is observed. */
  runtime: Pick<WorkerRuntimePort, 'observe'>;
  secretNamespace?: string;
  homeNamespace?: string;
  slotWalDegradedBytes: number;
  captureReleaseTimeoutMs: number;
}

/**
 * The Connector (spec 3.2): it owns a worker. Its plan reads its data
 * models (a source), the subscriptions delivered to it with their data
 * model and source (a target), the pipelines that use it and its worker;
 * a change to it queues its pipelines, subscriptions and data models, and
 * the targets reading from those data models (they wait for it to be live).
 */
export function connectorReconciler(options: ConnectorReconcilerOptions): Reconciler<ConnectorResource> {
  return {
    kind: 'Connector',
    ownsWorkers: true,
    dependents(c, cache) {
      const self = refOf(c);
      const datamodels = cache.referencing<DataModelResource>('DataModel', self);
      return [
        ...cache.referencing<PipelineResource>('Pipeline', self).map(refOf),
        ...cache.referencing<SubscriptionResource>('Subscription', self).map(refOf),
        ...datamodels.flatMap((d) => [
          refOf(d),
          // Targets reading from this source wait for it to be live.
          ...cache
            .referencing<SubscriptionResource>('Subscription', refOf(d))
            .map((s) => objectRef('Connector', s.metadata.namespace, s.spec.targetConnectorId)),
        ]),
      ];
    },
    async reconcile(ref, connector, { cache, now }) {
      const id = workerId(ref.namespace, ref.name);
      const worker = await options.runtime.observe(id);
      // Gone without our finalizer (deleted before the operator ever saw it): its worker must go too.
      if (!connector) return worker ? { actions: [{ type: 'stopWorker', id }] } : undefined;
      return planConnector({ ...connectorInput(connector, cache, options), worker, now });
    },
  };
}

function connectorInput(
  connector: ConnectorResource,
  cache: CacheView,
  options: ConnectorReconcilerOptions,
): Omit<ConnectorInput, 'worker' | 'now'> {
  const self = refOf(connector);
  const { namespace: ns, name } = self;
  const subscriptions = cache
    .referencing<SubscriptionResource>('Subscription', self)
    .filter((s) => s.spec.targetConnectorId === name)
    .flatMap((subscription) => {
      const datamodel = cache.get<DataModelResource>('DataModel', ns, subscription.spec.datamodelId);
      const source = datamodel && cache.get<ConnectorResource>('Connector', ns, datamodel.spec.connectorId);
      const pipelines = cache.referencing<PipelineResource>('Pipeline', refOf(subscription));
      return datamodel && source ? [{ subscription, datamodel, source, pipelines }] : [];
    });
  const { secretNamespace, homeNamespace } = options;
  return {
    connector,
    datamodels: cache.referencing<DataModelResource>('DataModel', self),
    subscriptions,
    pipelines: cache.referencing<PipelineResource>('Pipeline', self),
    ...(secretNamespace !== undefined ? { secretNamespace } : {}),
    ...(homeNamespace !== undefined ? { homeNamespace } : {}),
    slotWalDegradedBytes: options.slotWalDegradedBytes,
    captureReleaseTimeoutMs: options.captureReleaseTimeoutMs,
  };
}
