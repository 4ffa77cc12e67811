import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { loadAll } from 'js-yaml';
import { customResourceDefinition, MAX_REPLICAS, scalesOut } from '@sluice/shared/catalog';

// examples/keda-scaledobject.yaml scales the Kafka pipeline example's target
// through the Connector's scale subresource: it must name a target Connector
// of that example, its subscription's consumer group and its data model's
// topic, and stay within what the CRD accepts, or KEDA scales nothing (or
// is refused) on a user's cluster. KEDA itself does not run here.

const EXAMPLES = resolve(import.meta.dirname, '../../../examples');

/* eslint-disable @typescript-eslint/no-explicit-any -- manifests are walked as plain data */
type Any = any;
const docs = (file: string) => loadAll(readFileSync(join(EXAMPLES, file), 'utf8')) as Any[];

describe('examples/keda-scaledobject.yaml', () => {
  const [scaled] = docs('keda-scaledobject.yaml');
  const pipeline = docs('kafka-to-kafka-pipeline.yaml');
  const named = (kind: string, name: string) => pipeline.find((d) => d.kind === kind && d.metadata.name === name);

  it("targets the scale subresource of the example's target Connector", () => {
    expect(scaled).toMatchObject({ apiVersion: 'keda.sh/v1alpha1', kind: 'ScaledObject' });
    const ref = scaled.spec.scaleTargetRef;
    expect(ref).toMatchObject({ apiVersion: 'sluice.dev/v1alpha1', kind: 'Connector' });
    const connector = named('Connector', ref.name);
    expect(scalesOut(connector?.spec.connectorType)).toBe(true);
    const version = (customResourceDefinition('Connector').spec.versions as Any[])[0];
    expect(version.subresources.scale.specReplicasPath).toBe('.spec.replicas');
    expect(scaled.spec.minReplicaCount).toBeGreaterThanOrEqual(1);
    expect(scaled.spec.maxReplicaCount).toBeLessThanOrEqual(MAX_REPLICAS);
  });

  it("reads the lag of that connector's subscription on its data model's topic", () => {
    const [trigger] = scaled.spec.triggers;
    const target = scaled.spec.scaleTargetRef.name;
    const subscription = pipeline.find((d) => d.kind === 'Subscription' && d.spec.targetConnectorId === target);
    const datamodel = named('DataModel', subscription.spec.datamodelId);
    const source = named('Connector', datamodel.spec.connectorId);
    expect(trigger.type).toBe('kafka');
    expect(trigger.metadata).toMatchObject({
      consumerGroup: subscription.spec.consumerId,
      // A Kafka source's stream is its own topic on its own cluster.
      topic: source.spec.configuration.topic,
      bootstrapServers: source.spec.configuration.bootstrap_servers,
    });
  });
});
