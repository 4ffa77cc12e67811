import { afterAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { Admin } from '@platformatic/kafka';
import { MetricsRegistry } from '@sluice/shared/metrics';
import { describeWithKafka, testKafkaBrokers } from '@sluice/testing/kafka';
import { createTopic, readTopic, topicSize } from '@sluice/testing/kafka-helpers';
import { changeEvent } from '../src/contracts.js';
import { changePublisher } from '../src/sources/change-publisher.js';

// How the database sources publish, on the real broker: batches of 500
// events, each awaited. What a user would notice if that went wrong: a key's
// changes out of order on its partition, a flush that resolves before
// everything before it is on the broker (a checkpoint past unacknowledged
// events), or a refused batch that is never reported (changes lost while the
// position moves on).

const KEYS = 50;
const VERSIONS = 400;

describeWithKafka('change publisher (real broker)', () => {
  const brokers = testKafkaBrokers() ?? [];
  const admin = new Admin({ clientId: 'publisher-test', bootstrapBrokers: brokers });
  const env = process.env.SLUICE_STREAM_BROKERS;
  process.env.SLUICE_STREAM_BROKERS = brokers.join(',');
  afterAll(async () => {
    process.env.SLUICE_STREAM_BROKERS = env;
    await admin.close();
  });
  const ctx = { metrics: new MetricsRegistry(), log: () => undefined };
  const event = (id: number, version: number, extra = '') =>
    changeEvent({
      op: 'u',
      before: null,
      after: { id, version, extra },
      keyColumns: ['id'],
      connector_id: 'src',
      datamodel_id: 'dm',
      entry: 'public.t',
      position: `${version}`,
      snapshot: false,
      tsMs: Date.now(),
    });

  it('keeps each key in order, and a flush resolves once everything before it is on the broker', async () => {
    const topic = `sluice.publisher-${randomUUID().slice(0, 8)}`;
    await createTopic(brokers, topic, 3);
    const publisher = changePublisher('publisher_test', [{ id: 'dm', topic }], ctx);
    try {
      let sent = 0;
      for (let version = 1; version <= VERSIONS; version++) {
        for (let id = 1; id <= KEYS; id++) {
          await publisher.onEvent(event(id, version));
          sent += 1;
        }
        // Flushes at uneven points, between the batches the buffer sends by itself.
        if (version % 97 === 0) {
          await publisher.flush();
          expect(await topicSize(admin, topic)).toBe(sent);
        }
      }
      await publisher.flush();
      expect(await topicSize(admin, topic)).toBe(KEYS * VERSIONS);
    } finally {
      await publisher.close();
    }
    const messages = await readTopic(brokers, admin, topic);
    const versions = new Map<number, number[]>();
    for (const m of messages.sort(
      (a, b) => a.partition - b.partition || Number(a.offset) - Number(b.offset),
    )) {
      const after = (JSON.parse(m.value) as { after: { id: number; version: number } }).after;
      versions.set(after.id, [...(versions.get(after.id) ?? []), after.version]);
    }
    const every = Array.from({ length: VERSIONS }, (_, i) => i + 1);
    for (let id = 1; id <= KEYS; id++) expect(versions.get(id)).toEqual(every);
  });

  it('reports a batch the broker refused to the capture, which then records no position past it', async () => {
    const topic = `sluice.publisher-refused-${randomUUID().slice(0, 8)}`;
    await createTopic(brokers, topic, 1);
    const publisher = changePublisher('publisher_refused', [{ id: 'dm', topic }], ctx);
    let failure: unknown;
    try {
      // One event larger than the broker takes in a message (message.max.bytes, 1 MiB by default).
      await publisher.onEvent(event(1, 1, 'x'.repeat(2 * 1024 * 1024)));
      for (let id = 2; id <= 600; id++) await publisher.onEvent(event(id, 1));
      await publisher.flush();
    } catch (error) {
      failure = error;
    } finally {
      await publisher.close();
    }
    // The capture stops at a failed onEvent or flush (its done rejects) before it records a position.
    expect(failure).toBeInstanceOf(Error);
  });
});
