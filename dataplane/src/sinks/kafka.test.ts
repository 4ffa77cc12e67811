import { afterAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { Admin } from '@platformatic/kafka';
import type { WorkerConfig } from '@sluice/shared/catalog';
import { OutboundPolicy } from '@sluice/shared/net';
import { describeWithKafka, testKafkaBrokers } from '@sluice/testing/kafka';
import { createTopic, readTopic } from '@sluice/testing/kafka-helpers';
import { truncate, upsert } from '../../test/sink-records.js';
import { openKafkaSink, TARGET_OP_HEADER } from './kafka.js';

// The KAFKA_TARGET sink's truncate on the real broker: a consumer of a topic
// of several partitions must meet it in each of them, after the rows
// written before it.

describeWithKafka('Kafka target sink: a truncate', () => {
  const brokers = testKafkaBrokers() ?? [];
  const topic = `sluice-test-truncate-${randomUUID().slice(0, 8)}`;
  const admin = new Admin({ clientId: 'sluice-test-admin', bootstrapBrokers: brokers });
  afterAll(async () => {
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin.close();
  });

  it('goes to every partition of the topic, once for copies sent together, keyed {} with no value and marked', async () => {
    await createTopic(brokers, topic, 3);
    const config = {
      connector_id: 'kafka-truncate-test',
      configuration: { bootstrap_servers: brokers.join(',') },
    } as unknown as WorkerConfig;
    const sink = await openKafkaSink(config, { policy: new OutboundPolicy({ allow: ['127.0.0.0/8'] }) });
    try {
      const rows = Array.from({ length: 12 }, (_, id) => upsert(topic, { id }));
      await sink.write(
        [...rows, truncate(topic), truncate(topic), upsert(topic, { id: 100 })],
        new AbortController().signal,
      );
    } finally {
      await sink.close();
    }
    const messages = await readTopic(brokers, admin, topic);
    const marked = messages.filter((m) => m.headers.get(TARGET_OP_HEADER) === 'truncate');
    expect(marked.map((m) => m.partition).sort()).toEqual([0, 1, 2]);
    for (const m of marked) {
      expect(m.key).toBe('{}');
      expect(m.value).toBeFalsy();
      // Every row before it in its partition came before it; the row after it, after.
      for (const other of messages.filter((x) => x.partition === m.partition && x !== m)) {
        const id = (JSON.parse(other.value) as { id: number }).id;
        expect(id === 100 ? other.offset > m.offset : other.offset < m.offset).toBe(true);
      }
    }
    expect(messages).toHaveLength(12 + 3 + 1);
  });
});
