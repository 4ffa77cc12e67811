import { Producer, ProduceAcks, type MessageToProduce } from '@platformatic/kafka';
import type { WorkerConfig } from '@sluice/shared/catalog';
import type { Sink, SinkRecord } from '../contracts.js';
import type { Engine } from '../engine.js';
import { clientOptions, kafkaConnection } from '../systems/kafka/connection.js';
import { chunkBySize } from '../systems/kafka/produce-chunks.js';
import { workerOutboundPolicy } from '../outbound.js';
import { describeKafkaFailure } from '../systems/kafka/errors.js';
import { targetEngine } from '../target/target-loop.js';
import { withoutRepeatedTruncates } from '../target/truncate-barrier.js';
import type { SinkOpenOptions } from './target-engines.js';

// KAFKA_TARGET (spec 2.13): each record is one message on the topic named by
// the subscription's target_table_name; the value is the row as JSON and the
// key the JSON object of its primary-key columns, so one row's versions land
// in one partition, in order, and a compacted topic keeps its latest; rows of
// a subscription without a primary_key rule have no key. A delete is a
// tombstone (no value). A truncate (every row of the source table gone) goes
// to every partition of the topic, as a message keyed `{}` with no value and
// the header `sluice-op: truncate`: a consumer that knows it empties its
// copy at that point of each partition; one that does not sees a delete of
// a key no row has. A batch goes as requests of at most 512 KiB
// (produce-chunks.ts). The producer is idempotent with acks=all, so a retry
// inside the client writes no duplicate; a batch sent again after a crash
// does (at-least-once: docs/data-plane.md). Every broker it dials, bootstrap
// or leader, is under the outbound address policy (kafka/broker-policy.ts).

// Keys and values are encoded here, once: the request-size split reads
// their length, and the producer sends them as they are (no serializer).
type Out = MessageToProduce<Buffer, Buffer, Buffer, Buffer>;

/** The message key of a record: JSON of its key columns, in their declared order. */
export function recordKey(r: SinkRecord): string {
  return JSON.stringify(Object.fromEntries(r.keyColumns.map((k) => [k, r.row[k] ?? null])));
}

export function toKafkaMessage(r: SinkRecord): Out {
  // Without a primary_key rule a row has no key: the producer spreads such
  // rows over the partitions, instead of writing every row twice (as key and
  // value). A delete keeps its key: a tombstone means nothing without one.
  const message: Out = { topic: r.table };
  if (!(r.wholeRowKey && r.op === 'upsert')) message.key = Buffer.from(recordKey(r));
  if (r.op !== 'delete') message.value = Buffer.from(JSON.stringify(r.row));
  return message;
}

/** The header that marks a truncate on a KAFKA_TARGET topic. */
export const TARGET_OP_HEADER = 'sluice-op';

/** A truncate's messages: one per partition of its topic. */
function truncateMessages(r: SinkRecord, partitions: number): Out[] {
  return Array.from({ length: partitions }, (_, partition) => ({
    topic: r.table,
    partition,
    key: Buffer.from('{}'),
    headers: new Map([[Buffer.from(TARGET_OP_HEADER), Buffer.from('truncate')]]),
  }));
}

export class KafkaSink implements Sink {
  readonly #producer: Producer<Buffer, Buffer, Buffer, Buffer>;
  /** Partitions of the target topics truncates went to, read once each. */
  readonly #partitions = new Map<string, number>();
  /** The bootstrap brokers, as failures name them. */
  readonly #where: string;

  constructor(configuration: Record<string, unknown>, clientId: string, o: SinkOpenOptions) {
    const connection = kafkaConnection(configuration);
    this.#where = connection.brokers.join(',');
    this.#producer = new Producer({
      ...clientOptions(connection, clientId, o.policy),
      idempotent: true,
      acks: ProduceAcks.ALL,
      // Target topics are created on first use with the broker's defaults.
      autocreateTopics: true,
    });
  }

  /** Fails clearly when the brokers cannot be reached with these settings. */
  async connect(): Promise<void> {
    try {
      await this.#producer.metadata({ topics: [] });
    } catch (e) {
      throw new Error(`cannot reach the target Kafka cluster: ${describeKafkaFailure(e, this.#where)}`, {
        cause: e,
      });
    }
  }

  async write(batch: readonly SinkRecord[], _signal: AbortSignal, ready?: Promise<void>): Promise<void> {
    if (batch.length === 0) return;
    const records = withoutRepeatedTruncates(batch);
    const truncated = [...new Set(records.filter((r) => r.op === 'truncate').map((r) => r.table))];
    // Encoded before `ready` (CPU work that overlaps the previous commit), unless truncates need the topics' partitions.
    const encode = () =>
      chunkBySize(
        records.flatMap((r) =>
          r.op === 'truncate' ? truncateMessages(r, this.#partitions.get(r.table) ?? 1) : [toKafkaMessage(r)],
        ),
      );
    let requests = truncated.length === 0 ? encode() : null;
    await ready;
    try {
      if (requests === null) {
        const unknown = truncated.filter((t) => !this.#partitions.has(t));
        if (unknown.length > 0) {
          const meta = await this.#producer.metadata({ topics: unknown, autocreateTopics: true });
          for (const t of unknown) this.#partitions.set(t, meta.topics.get(t)?.partitionsCount ?? 1);
        }
        requests = encode();
      }
      for (const messages of requests) await this.#producer.send({ messages });
    } catch (e) {
      throw new Error(describeKafkaFailure(e, this.#where), { cause: e });
    }
  }

  async close(): Promise<void> {
    await this.#producer.close();
  }
}

/** A connected KafkaSink of a target configuration (secrets resolved). */
export async function openKafkaSink(config: WorkerConfig, o: SinkOpenOptions): Promise<Sink> {
  const sink = new KafkaSink(config.configuration, `sluice-${config.connector_id}`, o);
  try {
    await sink.connect();
  } catch (e) {
    await sink.close().catch(() => undefined);
    throw e;
  }
  return sink;
}

export const kafkaTargetEngine: Engine = targetEngine((config) =>
  openKafkaSink(config, { policy: workerOutboundPolicy() }),
);
