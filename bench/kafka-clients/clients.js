// The three Kafka clients compared by bench/kafka-clients, behind one small
// interface: produce N messages in batches with one batch in flight (as a
// Sluice target worker sends), then consume them from the beginning with a new
// consumer group. Every producer is idempotent with acks=all and no
// compression; every consumer reads without committing, its clock started
// before it joins its group (the join is part of what a consumer costs).
/* global performance -- Node 24 global */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Producer, ProduceAcks, stringSerializers } from '@platformatic/kafka';
import { openEarliestStream } from '../pipeline/kafka.js';

/** The installed version of a package of the repository's node_modules (not every package exports its package.json). */
const installed = (name) =>
  JSON.parse(readFileSync(new URL(`../../node_modules/${name}/package.json`, import.meta.url), 'utf8'))
    .version;

/**
 * Counts consumed messages until `n`. The clock starts at `start()`, called
 * just before the client joins its group and fetches: callbacks that receive
 * whole batches would otherwise look faster than streams of single messages.
 */
const consumeUntil = (n) => {
  let seen = 0;
  let begun = 0;
  let resolve;
  const done = new Promise((r) => (resolve = r));
  return {
    done,
    start: () => (begun = performance.now()),
    add(count) {
      seen += count;
      if (seen >= n) resolve({ seconds: (performance.now() - begun) / 1000, messages: seen });
    },
  };
};

const platformatic = {
  name: '@platformatic/kafka',
  version: () => installed('@platformatic/kafka'),
  async produce({ brokers, topic, batches }) {
    const producer = new Producer({
      clientId: 'bench-platformatic',
      bootstrapBrokers: brokers,
      idempotent: true,
      acks: ProduceAcks.ALL,
      serializers: stringSerializers,
    });
    await producer.metadata({ topics: [topic] });
    const start = performance.now();
    for (const batch of batches) await producer.send({ messages: batch.map((m) => ({ topic, ...m })) });
    const seconds = (performance.now() - start) / 1000;
    await producer.close();
    return seconds;
  },
  async consume({ brokers, topic, n }) {
    const counter = consumeUntil(n);
    counter.start();
    const { stream, close } = await openEarliestStream({ brokers, topic, clientId: 'bench-platformatic' });
    stream.on('data', () => counter.add(1));
    const result = await counter.done;
    await close();
    return result.seconds;
  },
};

const kafkajs = {
  name: 'kafkajs',
  version: () => installed('kafkajs'),
  async client(brokers) {
    const { Kafka, logLevel } = await import('kafkajs');
    return new Kafka({ clientId: 'bench-kafkajs', brokers, logLevel: logLevel.NOTHING });
  },
  async produce({ brokers, topic, batches }) {
    const producer = (await this.client(brokers)).producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    const start = performance.now();
    for (const messages of batches) await producer.send({ topic, acks: -1, messages });
    const seconds = (performance.now() - start) / 1000;
    await producer.disconnect();
    return seconds;
  },
  async consume({ brokers, topic, n }) {
    const consumer = (await this.client(brokers)).consumer({ groupId: `bench-${topic}-${Date.now()}` });
    await consumer.connect();
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    const counter = consumeUntil(n);
    counter.start();
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => counter.add(batch.messages.length),
    });
    const result = await counter.done;
    await consumer.disconnect();
    return result.seconds;
  },
};

/**
 * @confluentinc/kafka-javascript through its KafkaJS-compatible API. Its
 * native addon is built by build-confluent.sh; `packageDir` is where.
 */
const confluent = (packageDir) => {
  const load = () => createRequire(`${packageDir}/package.json`)(packageDir);
  const kafka = (brokers) =>
    new (load().KafkaJS.Kafka)({
      kafkaJS: { clientId: 'bench-confluent', brokers, logLevel: load().KafkaJS.logLevel.NOTHING },
    });
  return {
    name: '@confluentinc/kafka-javascript',
    version: () => JSON.parse(readFileSync(`${packageDir}/package.json`, 'utf8')).version,
    async produce({ brokers, topic, batches }) {
      const producer = kafka(brokers).producer({ kafkaJS: { idempotent: true, acks: -1 } });
      await producer.connect();
      const start = performance.now();
      for (const messages of batches) await producer.send({ topic, messages });
      const seconds = (performance.now() - start) / 1000;
      await producer.disconnect();
      return seconds;
    },
    async consume({ brokers, topic, n }) {
      const consumer = kafka(brokers).consumer({
        kafkaJS: { groupId: `bench-${topic}-${Date.now()}`, fromBeginning: true, autoCommit: false },
      });
      await consumer.connect();
      await consumer.subscribe({ topics: [topic] });
      const counter = consumeUntil(n);
      counter.start();
      await consumer.run({ eachBatch: async ({ batch }) => counter.add(batch.messages.length) });
      const result = await counter.done;
      await consumer.disconnect();
      return result.seconds;
    },
  };
};

export const CLIENTS = { platformatic, kafkajs, confluent };
