import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import {
  Admin,
  Consumer,
  MessagesStreamFallbackModes,
  MessagesStreamModes,
  Producer,
  jsonDeserializer,
  jsonSerializer,
  stringDeserializer,
  stringSerializer,
  type Message,
  type SASLMechanismValue,
} from '@platformatic/kafka';
import { describeWithKafka, testKafkaBrokers, testKafkaSecurity } from '@sluice/testing/kafka';

/**
 * The Kafka client the workers and the pre-flight checks use
 * (@platformatic/kafka, docs/architecture.md) against the real broker of
 * scripts/with-kafka.sh: topics, keyed JSON messages with headers, a consumer
 * group that commits and resumes where it committed, and the SASL and TLS
 * listeners.
 */

interface Order {
  id: number;
  customer: string;
  amount: number;
}
type OrderMessage = Message<string, Order, string, string>;

const PARTITIONS = 3;
const FIRST_BATCH = 30;
const SECOND_BATCH = 6;

describeWithKafka('Kafka broker and client (@platformatic/kafka)', () => {
  const brokers = testKafkaBrokers() ?? [];
  const run = randomUUID().slice(0, 8);
  const topic = `sluice-test-orders-${run}`;
  const groupId = `sluice-test-group-${run}`;
  let admin: Admin;
  let producer: Producer<string, Order, string, string>;
  /** Closes of consumers a failed assertion left open: run after the tests, or jest would not exit. */
  const openConsumers = new Set<() => Promise<void>>();

  const newConsumer = () =>
    new Consumer<string, Order, string, string>({
      clientId: `sluice-test-consumer-${run}`,
      groupId,
      bootstrapBrokers: brokers,
      deserializers: {
        key: stringDeserializer,
        value: jsonDeserializer<Order>,
        headerKey: stringDeserializer,
        headerValue: stringDeserializer,
      },
      // Leaving the group on close lets the next member join at once.
      sessionTimeout: 10_000,
      heartbeatInterval: 500,
    });

  /**
   * Reads `topic` with a new member of the group, starting at the group's
   * committed offsets (the earliest offset when none is committed), without
   * committing anything, until every id in `expected` was seen. Kafka delivers
   * at least once: a member that rejoins while starting may be handed the
   * same messages twice, so all deliveries are returned. The consumer stays
   * open (the messages' commit() work until close()).
   */
  async function readFromGroup(
    expected: Set<number>,
  ): Promise<{ messages: OrderMessage[]; close(): Promise<void> }> {
    const consumer = newConsumer();
    const stream = await consumer.consume({
      topics: [topic],
      mode: MessagesStreamModes.COMMITTED,
      fallbackMode: MessagesStreamFallbackModes.EARLIEST,
      autocommit: false,
      maxWaitTime: 200,
    });
    const messages: OrderMessage[] = [];
    let closing: Promise<void> | undefined;
    const close = () =>
      (closing ??= (async () => {
        await stream.close();
        await consumer.close();
      })());
    openConsumers.add(close);
    const missing = new Set(expected);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`ids ${[...missing].join(', ')} not read in 20 s`)),
        20_000,
      );
      stream.on('data', (m: OrderMessage) => {
        messages.push(m);
        missing.delete(m.value.id);
        if (missing.size === 0) {
          clearTimeout(timer);
          stream.pause();
          resolve();
        }
      });
      stream.once('error', (e: Error) => {
        clearTimeout(timer);
        reject(e);
      });
    });
    return { messages, close };
  }

  /** One message per partition and offset (redeliveries dropped), in partition and offset order. */
  function distinct(messages: OrderMessage[]): OrderMessage[] {
    const seen = new Map<string, OrderMessage>();
    for (const m of messages) {
      const key = `${m.partition}:${m.offset}`;
      const other = seen.get(key);
      // A redelivery is the same record, never a different one at the same offset.
      if (other) expect(other.value).toEqual(m.value);
      else seen.set(key, m);
    }
    const records = [...seen.values()].sort(
      (a, b) => a.partition - b.partition || Number(a.offset - b.offset),
    );
    // …and every message sent was written once.
    const written = records.map((m) => `id ${m.value.id} at ${m.partition}:${m.offset}`);
    const ids = records.map((m) => m.value.id);
    expect(written.filter((_, i) => ids.indexOf(ids[i] as number) !== i)).toEqual([]);
    return records;
  }

  /** Deliveries below the given offsets: a member that did not resume where the group committed. */
  function belowCommitted(messages: OrderMessage[], committed: Map<number, bigint>): string[] {
    return messages
      .filter((m) => m.offset < (committed.get(m.partition) ?? 0n))
      .map((m) => `id ${m.value.id} at ${m.partition}:${m.offset}`);
  }

  /** The group's committed offset of each partition of the topic, as the broker has it. */
  async function committedOffsets(): Promise<Map<number, bigint>> {
    const [group] = await admin.listConsumerGroupOffsets({ groups: [groupId] });
    const partitions = group?.topics.find((t) => t.name === topic)?.partitions ?? [];
    return new Map(partitions.map((p) => [p.partitionIndex, p.committedOffset]));
  }

  const send = async (ids: number[]) => {
    await producer.send({
      messages: ids.map((id) => ({
        topic,
        key: `customer-${id % 7}`,
        value: { id, customer: `customer-${id % 7}`, amount: id * 10 },
        headers: new Map([
          ['source', 'sluice-test'],
          ['seq', String(id)],
        ]),
      })),
    });
  };

  beforeAll(async () => {
    admin = new Admin({ clientId: `sluice-test-admin-${run}`, bootstrapBrokers: brokers });
    producer = new Producer<string, Order, string, string>({
      clientId: `sluice-test-producer-${run}`,
      bootstrapBrokers: brokers,
      serializers: {
        key: stringSerializer,
        value: jsonSerializer<Order>,
        headerKey: stringSerializer,
        headerValue: stringSerializer,
      },
      // Idempotent, as the workers' producers must be: this client retries a
      // whole produce request when one partition of it fails (a leader not
      // known yet on a new topic, seen here on a fresh broker), which without
      // sequence numbers writes the other partitions' messages twice.
      idempotent: true,
    });
  });

  afterAll(async () => {
    for (const close of openConsumers) await close().catch(() => undefined);
    await producer?.close();
    await admin?.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin?.close();
  });

  it('creates a topic with partitions and lists it', async () => {
    const created = await admin.createTopics({ topics: [topic], partitions: PARTITIONS, replicas: 1 });
    expect(created.map((t) => t.name)).toEqual([topic]);

    // The controller has the topic once createTopics returns; the broker's
    // metadata follows a moment later.
    let listed: string[] = [];
    for (let i = 0; i < 50 && !listed.includes(topic); i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, 100));
      listed = await admin.listTopics();
    }
    expect(listed).toContain(topic);
    const metadata = await admin.metadata({ topics: [topic], forceUpdate: true });
    expect(metadata.topics.get(topic)?.partitionsCount).toBe(PARTITIONS);
    expect([...metadata.brokers.values()].map((b) => `${b.host}:${b.port}`)).toContain(brokers[0]);
  });

  it('consumes keyed JSON messages with headers, commits, and a new member resumes after the committed offsets', async () => {
    const ids = Array.from({ length: FIRST_BATCH }, (_, i) => i);
    await send(ids);

    // First member: every message, as sent.
    const first = await readFromGroup(new Set(ids));
    const read = distinct(first.messages);
    expect(read.map((m) => m.value.id).sort((a, b) => a - b)).toEqual(ids);
    for (const m of read) {
      expect(m.topic).toBe(topic);
      expect(m.key).toBe(`customer-${m.value.id % 7}`);
      expect(m.value).toEqual({ id: m.value.id, customer: m.key, amount: m.value.id * 10 });
      expect(Object.fromEntries(m.headers)).toEqual({ source: 'sluice-test', seq: String(m.value.id) });
    }
    // One key, one partition; within a partition, the order of sending.
    const partitionOfKey = new Map<string, number>();
    for (const m of read) {
      expect(partitionOfKey.get(m.key) ?? m.partition).toBe(m.partition);
      partitionOfKey.set(m.key, m.partition);
    }
    const byPartition = new Map<number, OrderMessage[]>();
    for (const m of read) byPartition.set(m.partition, [...(byPartition.get(m.partition) ?? []), m]);
    expect(byPartition.size).toBeGreaterThan(1);
    for (const list of byPartition.values()) {
      const seqs = list.map((m) => m.value.id);
      expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
      expect(list.map((m) => m.offset)).toEqual(list.map((_, i) => BigInt(i)));
    }

    // Commit the first half of each partition only (the offset after the
    // last message kept), as a worker does once its target confirmed them.
    const halfway = new Map<number, bigint>();
    const uncommitted = new Set<number>();
    for (const [partition, list] of byPartition) {
      const keep = Math.ceil(list.length / 2);
      await list[keep - 1]?.commit();
      halfway.set(partition, BigInt(keep));
      for (const m of list.slice(keep)) uncommitted.add(m.value.id);
    }
    await first.close();
    expect(await committedOffsets()).toEqual(halfway);

    // Second member: the messages after the committed offsets, none before.
    const second = await readFromGroup(uncommitted);
    expect(belowCommitted(second.messages, halfway)).toEqual([]);
    expect(new Set(second.messages.map((m) => m.value.id))).toEqual(uncommitted);
    // It commits everything it read.
    const lastOfPartition = new Map<number, OrderMessage>();
    for (const m of second.messages) {
      if (m.offset > (lastOfPartition.get(m.partition)?.offset ?? -1n)) lastOfPartition.set(m.partition, m);
    }
    for (const m of lastOfPartition.values()) await m.commit();
    await second.close();
    const end = new Map([...byPartition].map(([partition, list]) => [partition, BigInt(list.length)]));
    expect(await committedOffsets()).toEqual(end);

    // Third member, after more messages were produced: only those.
    const more = Array.from({ length: SECOND_BATCH }, (_, i) => FIRST_BATCH + i);
    await send(more);
    const third = await readFromGroup(new Set(more));
    expect(belowCommitted(third.messages, end)).toEqual([]);
    expect(
      distinct(third.messages)
        .map((m) => m.value.id)
        .sort((a, b) => a - b),
    ).toEqual(more);
    await third.close();
  }, 90_000);
});

/**
 * The codes and messages of an error and of everything it wraps: the client
 * reports a refused login as MultipleErrors → NetworkError →
 * AuthenticationError → …, which a pre-flight check has to unwrap to say
 * something clear.
 */
function errorChain(error: unknown): string[] {
  const out: string[] = [];
  const walk = (e: unknown) => {
    // Not `instanceof Error`: Node's own errors come from another realm under jest.
    if (typeof e !== 'object' || e === null || !('message' in e)) return;
    const { code, name, message, errors, cause } = e as Error & { code?: string; errors?: unknown[] };
    out.push(`${code ?? name}: ${message}`);
    for (const inner of errors ?? []) walk(inner);
    walk(cause);
  };
  walk(error);
  return out;
}

async function failureOf(promise: Promise<unknown>): Promise<string[]> {
  try {
    await promise;
  } catch (e) {
    return errorChain(e);
  }
  throw new Error('expected a failure');
}

/** Lists the topics through one of the secured listeners; throws what the client throws. */
async function listTopicsWith(options: {
  brokers: string[];
  sasl?: { mechanism: SASLMechanismValue; username: string; password: string };
  ca?: Buffer;
  tls?: boolean;
}): Promise<string[]> {
  const admin = new Admin({
    clientId: 'sluice-test-security',
    bootstrapBrokers: options.brokers,
    retries: 0,
    connectTimeout: 5_000,
    requestTimeout: 5_000,
    ...(options.sasl ? { sasl: options.sasl } : {}),
    ...(options.tls ? { tls: options.ca ? { ca: options.ca } : {} } : {}),
  });
  try {
    return await admin.listTopics();
  } finally {
    await admin.close().catch(() => undefined);
  }
}

describeWithKafka('Kafka broker: SASL and TLS listeners', () => {
  const security = testKafkaSecurity();
  const mechanisms: SASLMechanismValue[] = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'];

  if (!security) {
    // SLUICE_TEST_KAFKA_BROKERS names a broker of someone else's: only the
    // brokers scripts/with-kafka.sh starts have these listeners.
    it.skip('needs the SASL/TLS listeners of a broker started by scripts/with-kafka.sh', () => undefined);
    if (testKafkaBrokers())
      console.warn('Kafka SASL/TLS tests skipped: the broker was not started by scripts/with-kafka.sh');
    return;
  }
  const { username, password } = security;
  const ca = readFileSync(security.caFile);

  it.each(mechanisms)(
    'SASL_PLAINTEXT with %s: the right password lists topics, a wrong one is refused',
    async (mechanism) => {
      const topics = await listTopicsWith({
        brokers: security.saslPlaintextBrokers,
        sasl: { mechanism, username, password },
      });
      expect(Array.isArray(topics)).toBe(true);
      const refused = await failureOf(
        listTopicsWith({
          brokers: security.saslPlaintextBrokers,
          sasl: { mechanism, username, password: `${password}-wrong` },
        }),
      );
      expect(refused).toContain('PLT_KFK_AUTHENTICATION: SASL authentication failed.');
    },
  );

  it('SSL: trusted with the test CA, refused without it', async () => {
    expect(Array.isArray(await listTopicsWith({ brokers: security.sslBrokers, tls: true, ca }))).toBe(true);
    const refused = await failureOf(listTopicsWith({ brokers: security.sslBrokers, tls: true }));
    expect(refused).toEqual(
      expect.arrayContaining([expect.stringMatching(/^UNABLE_TO_VERIFY_LEAF_SIGNATURE: /)]),
    );
  });

  it('SASL_SSL with SCRAM-SHA-512', async () => {
    const topics = await listTopicsWith({
      brokers: security.saslSslBrokers,
      tls: true,
      ca,
      sasl: { mechanism: 'SCRAM-SHA-512', username, password },
    });
    expect(Array.isArray(topics)).toBe(true);
  });
});
