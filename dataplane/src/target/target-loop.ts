import {
  Consumer,
  MessagesStreamFallbackModes,
  MessagesStreamModes,
  type Message,
  type MessagesStream,
} from '@platformatic/kafka';
import { abortableSleep, LATENCY_BUCKETS_S, type WorkerConfig } from '@sluice/shared';
import type { Sink, SinkRecord } from '../contracts.js';
import type { Engine, WorkerContext } from '../engine.js';
import {
  clientOptions,
  connectionKey,
  streamKafkaConnection,
  type KafkaConnection,
} from '../systems/kafka/connection.js';
import { isOutboundRefusal } from '../systems/kafka/broker-policy.js';
import { describeKafkaFailure } from '../systems/kafka/errors.js';
import { SystemFailure } from '../systems/failure.js';
import { positiveSetting } from '../settings.js';
import { unknownTopicIn } from '../systems/kafka/topic-partitions.js';
import { workerOutboundPolicy } from '../outbound.js';
import { resolveSecrets } from '../secrets.js';
import {
  mapMessage,
  prepareSubscription,
  type ConsumedMessage,
  type PreparedSubscription,
} from './records.js';

// The target worker: consume the streams of the enabled subscriptions, map,
// write batches to the Sink, and commit offsets only after the Sink confirmed
// (at-least-once). One Kafka consumer per (cluster, consumer group); each has
// one batch in flight at a time, so offsets are committed in order.

export interface TargetLoopOptions {
  /** Messages per Sink batch at most. */
  batchSize: number;
  /** How long a partial batch waits for more messages. */
  lingerMs: number;
  /** Messages buffered per consumer before consumption pauses (back-pressure). */
  maxBuffered: number;
  /** Sink attempts per batch before the worker fails (the batch is then redelivered to the next worker). */
  writeAttempts: number;
  /** Bytes of one fetch response at most (1 MiB of them per partition at most). */
  fetchMaxBytes: number;
}

/** Kafka's own consumer default (`max.partition.fetch.bytes`). */
const FETCH_MAX_BYTES_PER_PARTITION = 1024 * 1024;

/** Defaults, overridable by the environment (bench/ and tests tune them; docs/data-plane.md). */
export function loopOptions(env: NodeJS.ProcessEnv = process.env): TargetLoopOptions {
  const num = (name: string, fallback: number) => positiveSetting(env, name, fallback);
  return {
    batchSize: num('SLUICE_BATCH_SIZE', 500),
    lingerMs: num('SLUICE_BATCH_LINGER_MS', 50),
    maxBuffered: num('SLUICE_MAX_BUFFERED_MESSAGES', 5000),
    writeAttempts: num('SLUICE_WRITE_ATTEMPTS', 5),
    fetchMaxBytes: num('SLUICE_FETCH_MAX_BYTES', 4 * 1024 * 1024),
  };
}

/** Opens the Sink of a target connector from its resolved configuration. */
export type SinkFactory = (config: WorkerConfig, ctx: WorkerContext) => Promise<Sink>;

type RawMessage = Message<Buffer, Buffer, Buffer, Buffer>;

interface Group {
  connection: KafkaConnection;
  groupId: string;
  subs: PreparedSubscription[];
}

function groupsOf(subs: PreparedSubscription[]): Group[] {
  const groups = new Map<string, Group>();
  for (const s of subs) {
    const connection = streamKafkaConnection(s.config.stream);
    const id = `${connectionKey(connection)}\0${s.config.consumer_id}`;
    const g = groups.get(id) ?? { connection, groupId: s.config.consumer_id, subs: [] };
    g.subs.push(s);
    groups.set(id, g);
  }
  return [...groups.values()];
}

/** A target engine around the Sink that `createSink` opens. */
export function targetEngine(createSink: SinkFactory, options = loopOptions()): Engine {
  return {
    async start(raw, signal, ctx) {
      const config = resolveSecrets(raw);
      const subs = (config.subscriptions ?? []).filter((s) => s.enabled).map(prepareSubscription);
      for (const s of subs) {
        const et = s.config.error_table;
        if (et.enabled && et.target_connector_id && et.target_connector_id !== config.connector_id) {
          throw new Error(
            `subscription ${s.config.id}: error tables on another target connector are not supported by this version of Sluice`,
          );
        }
      }
      const sink = await createSink(config, ctx);
      const m = metricsOf(ctx);
      const groups = groupsOf(subs);
      const loops: Promise<void>[] = [];
      const stops: (() => Promise<void>)[] = [];
      try {
        for (const g of groups) {
          const run = await startGroup(g, config.connector_id, sink, signal, ctx, m, options);
          loops.push(run.done);
          stops.push(run.close);
        }
      } catch (e) {
        await Promise.all(stops.map((s) => s().catch(() => undefined)));
        await sink.close().catch(() => undefined);
        throw e;
      }
      ctx.log('info', 'consuming', { subscriptions: subs.length, consumers: groups.length });
      const done = (async () => {
        try {
          // The first failing consumer fails the worker; abort ends them all.
          await Promise.all([
            ...loops,
            new Promise<void>((r) => signal.addEventListener('abort', () => r(), { once: true })),
          ]);
        } finally {
          await Promise.all(stops.map((s) => s().catch(() => undefined)));
          await sink.close().catch(() => undefined);
        }
      })();
      return { done };
    },
  };
}

export type TargetMetrics = ReturnType<typeof metricsOf>;

/** The target loop's metric families (a backfill registers them on a registry of its own). */
export function metricsOf(ctx: WorkerContext) {
  const r = ctx.metrics;
  return {
    // By subscription (the operator's monitoring collector adds them up per
    // data model and pipeline): a message of a topic two subscriptions of the
    // same consumer group read counts once for each.
    messagesIn: r.counter(
      'sluice_worker_messages_in_total',
      'Messages consumed from the change streams, by topic and subscription',
    ),
    messagesOut: r.counter(
      'sluice_worker_messages_out_total',
      'Messages whose records the target confirmed (offsets committed), by subscription',
    ),
    rowsWritten: r.counter('sluice_worker_rows_written_total', 'Rows written to the target, by table'),
    errors: r.counter(
      'sluice_worker_errors_total',
      'Failed messages and rows (not JSON, mapper errors), by subscription',
    ),
    lag: r.gauge('sluice_worker_lag_messages', 'Messages behind the end of each stream topic, by topic'),
    paused: r.gauge(
      'sluice_worker_consumption_paused',
      '1 while consumption is paused because the target is slower',
    ),
    batches: r.counter('sluice_worker_batches_total', 'Batches written to the target'),
    lastEvent: r.gauge(
      'sluice_worker_last_event_timestamp_seconds',
      'Time of the newest event the target confirmed, by subscription',
    ),
    latency: r.histogram(
      'sluice_worker_end_to_end_latency_seconds',
      'From the event (emitted_ms, or the Kafka timestamp) to its confirmation by the target, by subscription',
      LATENCY_BUCKETS_S,
    ),
  };
}

async function startGroup(
  g: Group,
  connectorId: string,
  sink: Sink,
  signal: AbortSignal,
  ctx: WorkerContext,
  m: TargetMetrics,
  o: TargetLoopOptions,
): Promise<{ done: Promise<void>; close(): Promise<void> }> {
  const topics = [...new Set(g.subs.map((s) => s.config.topic))];
  const consumer = new Consumer<Buffer, Buffer, Buffer, Buffer>({
    ...clientOptions(g.connection, `sluice-${connectorId}`, workerOutboundPolicy()),
    groupId: g.groupId,
    sessionTimeout: 10_000,
    heartbeatInterval: 1_000,
  });
  let stream: MessagesStream<Buffer, Buffer, Buffer, Buffer> | undefined;
  const close = async () => {
    consumer.stopLagMonitoring();
    await stream?.close().catch(() => undefined);
    await consumer.close(true).catch(() => undefined);
  };
  try {
    await consumer.metadata({ topics, autocreateTopics: false }).catch((e: unknown) => {
      const missing = unknownTopicIn(e);
      if (missing === undefined) throw e;
      throw new SystemFailure(`topic ${missing} does not exist on ${g.connection.brokers.join(',')}`, {
        cause: e,
      });
    });
    stream = await consumer.consume({
      topics,
      mode: MessagesStreamModes.COMMITTED,
      // Without committed offsets: from the beginning when a subscription asks for a backfill, else new messages only.
      fallbackMode: g.subs.some((s) => s.config.backfill)
        ? MessagesStreamFallbackModes.EARLIEST
        : MessagesStreamFallbackModes.LATEST,
      autocommit: false,
      maxWaitTime: 500,
      // The client's defaults (50 MiB per fetch and per partition) decode a
      // whole backlog at once, past the back-pressure of `maxBuffered`.
      maxBytes: o.fetchMaxBytes,
      maxBytesPerPartition: Math.min(o.fetchMaxBytes, FETCH_MAX_BYTES_PER_PARTITION),
    });
  } catch (e) {
    await close();
    throw new Error(
      `cannot consume ${topics.join(', ')}: ${describeKafkaFailure(e, g.connection.brokers.join(','))}`,
      { cause: e },
    );
  }
  consumer.on('consumer:lag', (lag) => {
    for (const [topic, partitions] of lag) {
      m.lag.set(
        { topic },
        partitions.reduce((sum, v) => sum + Number(v < 0n ? 0n : v), 0),
      );
    }
  });
  consumer.startLagMonitoring({ topics }, 5_000);

  const subsOf = new Map<string, PreparedSubscription[]>();
  for (const s of g.subs) subsOf.set(s.config.topic, [...(subsOf.get(s.config.topic) ?? []), s]);

  // The bounded buffer between the consumer and the writer. The writer
  // sleeps until a batch is full, or until `lingerMs` after the first
  // message of a partial one.
  const buffer: RawMessage[] = [];
  let wake: (() => void) | undefined;
  let linger: NodeJS.Timeout | undefined;
  const wakeUp = () => {
    clearTimeout(linger);
    linger = undefined;
    wake?.();
    wake = undefined;
  };
  const lingerIfWaiting = () => {
    if (wake && !linger && buffer.length > 0) linger = setTimeout(wakeUp, o.lingerMs);
  };
  let failure: Error | undefined;
  const active = stream;
  active.on('data', (msg: RawMessage) => {
    buffer.push(msg);
    if (buffer.length >= o.maxBuffered && !active.isPaused()) {
      active.pause();
      m.paused.set({ group: g.groupId }, 1);
    }
    if (buffer.length >= o.batchSize) wakeUp();
    else lingerIfWaiting();
  });
  active.once('error', (e: unknown) => {
    failure = new Error(
      `the stream of ${topics.join(', ')} failed: ${describeKafkaFailure(e, g.connection.brokers.join(','))}`,
    );
    wakeUp();
  });
  signal.addEventListener('abort', wakeUp, { once: true });
  m.paused.set({ group: g.groupId }, 0);

  // Counted once per batch and label set: per message, building the labels'
  // text was measured at 3% of a busy worker's CPU.
  const count = (batch: readonly RawMessage[], inc: (s: PreparedSubscription, n: number) => void) => {
    const perTopic = new Map<string, number>();
    for (const msg of batch) perTopic.set(msg.topic, (perTopic.get(msg.topic) ?? 0) + 1);
    for (const [topic, n] of perTopic) for (const s of subsOf.get(topic) ?? []) inc(s, n);
  };
  const path: WritePath = { subsOf, sink, signal, ctx, m, o };
  /** The next batch, mapped (its messages are then consumed, as far as the metrics go). */
  const take = () => {
    const batch = buffer.splice(0, o.batchSize);
    count(batch, (s, n) => m.messagesIn.inc({ topic: s.config.topic, subscription: s.config.id }, n));
    return batch;
  };

  // The offsets of the batch just written are committed while the next batch
  // is awaited and prepared, and before any of it reaches the target: a
  // worker killed at any point replays at most one written batch
  // (docs/data-plane.md "Delivery").
  let committing: Promise<void> = Promise.resolve();
  const acknowledge = async (batch: RawMessage[]) => {
    await commit(batch, ctx);
    count(batch, (s, n) => m.messagesOut.inc({ subscription: s.config.id }, n));
  };
  const done = (async () => {
    // A batch mapped while the previous one was being written.
    let ahead: Promise<{ batch: RawMessage[]; mapped: MappedBatch }> | undefined;
    try {
      while (!signal.aborted) {
        if (failure) throw failure;
        if (!ahead && buffer.length < o.batchSize) {
          // Wait for a full batch, or linger once something is there.
          await new Promise<void>((resolve) => {
            wake = resolve;
            lingerIfWaiting();
          });
          if (buffer.length === 0 || signal.aborted) continue;
        }
        let batch: RawMessage[];
        let mapped: MappedBatch;
        if (ahead) ({ batch, mapped } = await ahead);
        else mapped = mapBatch((batch = take()), path);
        ahead = undefined;
        // The Sink prepares this batch while the previous one's offsets are
        // committed, and sends it only after (`ready`).
        const writing = writeMapped(mapped, path, committing);
        if (buffer.length >= o.batchSize) {
          // With a backlog, the mapper works on the next batch while the
          // target writes this one (the mapper is pure: nothing is sent),
          // in slices: mapping a whole batch at once would hold back the
          // commit's answer and the write's requests for as long.
          writing.catch(() => undefined); // awaited below
          const next = take();
          ahead = mapBatchInSlices(next, path).then((result) => ({ batch: next, mapped: result }));
          ahead.catch(() => undefined); // awaited at the top of the loop
        }
        await writing;
        if (signal.aborted) return; // not confirmed everywhere: redelivered to the next worker
        committing = acknowledge(batch);
        if (active.isPaused() && buffer.length < o.maxBuffered / 2) {
          active.resume();
          m.paused.set({ group: g.groupId }, 0);
        }
      }
    } finally {
      // A stopping worker still commits what its target confirmed.
      await committing;
    }
  })();
  return { done, close };
}

/**
 * Maps a batch with each subscription of its topics and writes it to the
 * Sink, retried with back-off: the one write path of live delivery and of
 * backfills (docs/data-plane.md "Backfills").
 */
export async function writeBatch(batch: readonly ConsumedMessage[], path: WritePath): Promise<void> {
  await writeMapped(mapBatch(batch, path), path);
}

/** What writing batches needs: the subscriptions by topic, the Sink, and where to count and log. */
export interface WritePath {
  subsOf: Map<string, PreparedSubscription[]>;
  sink: Sink;
  signal: AbortSignal;
  ctx: WorkerContext;
  m: TargetMetrics;
  o: Pick<TargetLoopOptions, 'writeAttempts'>;
}

/** A batch after the mapper: its Sink records, and each message's event time for the latency. */
export interface MappedBatch {
  records: SinkRecord[];
  produced: { ms: number; topic: string }[];
}

/** Maps a batch with each subscription of its topics; failures are counted and logged (the error table has them). */
export function mapBatch(
  batch: readonly ConsumedMessage[],
  { subsOf, ctx, m }: Pick<WritePath, 'subsOf' | 'ctx' | 'm'>,
): MappedBatch {
  const records: SinkRecord[] = [];
  const produced: { ms: number; topic: string }[] = [];
  const errorTableOf = new Map<string, string>();
  for (const list of subsOf.values()) {
    for (const s of list) {
      const et = s.config.error_table;
      if (et.enabled && et.name) errorTableOf.set(s.config.id, et.name);
    }
  }
  for (const msg of batch) {
    const mapped = mapMessage(msg, subsOf.get(msg.topic) ?? []);
    records.push(...mapped.records);
    produced.push({ ms: mapped.producedMs, topic: msg.topic });
    for (const f of mapped.failures) {
      m.errors.inc({ subscription: f.subscription, kind: f.kind });
      // The position and the kind of failure, never the reason's text: it
      // quotes the content, which may be personal data (the error table has it).
      ctx.log('warn', 'message not delivered to the target table', {
        subscription: f.subscription,
        kind: f.kind,
        topic: msg.topic,
        partition: msg.partition,
        offset: msg.offset.toString(),
        error_table: errorTableOf.get(f.subscription) ?? null,
      });
    }
  }
  return { records, produced };
}

/** Messages mapped per slice by `mapBatchInSlices` (a few milliseconds of work). */
const MAP_SLICE = 50;

/** `mapBatch`, yielding to the event loop between slices of MAP_SLICE messages (I/O goes on meanwhile). */
export async function mapBatchInSlices(
  batch: readonly ConsumedMessage[],
  path: Pick<WritePath, 'subsOf' | 'ctx' | 'm'>,
): Promise<MappedBatch> {
  const out: MappedBatch = { records: [], produced: [] };
  for (let at = 0; at < batch.length; at += MAP_SLICE) {
    await new Promise<void>((resolve) => setImmediate(resolve));
    const part = mapBatch(batch.slice(at, at + MAP_SLICE), path);
    for (const r of part.records) out.records.push(r);
    for (const p of part.produced) out.produced.push(p);
  }
  return out;
}

/** Writes a mapped batch to the Sink (once `ready` resolved: Sink.write), retried with back-off, then counts it. */
export async function writeMapped(
  { records, produced }: MappedBatch,
  { subsOf, sink, signal, ctx, m, o }: WritePath,
  ready?: Promise<void>,
): Promise<void> {
  if (records.length === 0) await ready; // commits stay in order
  for (let attempt = 1; records.length > 0; attempt++) {
    try {
      await sink.write(records, signal, ready);
      break;
    } catch (e) {
      if (signal.aborted) return;
      const reason = e instanceof Error ? e.message : String(e);
      // An address the outbound policy refuses stays refused: no retry.
      if (isOutboundRefusal(e)) throw e;
      if (attempt >= o.writeAttempts)
        throw new Error(`the target refused a batch ${attempt} times: ${reason}`, { cause: e });
      ctx.log('warn', 'writing a batch failed; retrying', { attempt, reason });
      await abortableSleep(Math.min(30_000, 250 * 2 ** attempt), signal);
    }
  }
  const now = Date.now();
  const timesOf = new Map<string, number[]>();
  for (const { ms, topic } of produced) {
    if (ms <= 0) continue;
    const times = timesOf.get(topic);
    if (times) times.push(ms);
    else timesOf.set(topic, [ms]);
  }
  for (const [topic, times] of timesOf) {
    const newest = times.reduce((a, b) => Math.max(a, b), 0);
    const seconds = times.map((ms) => Math.max(0, now - ms) / 1000);
    for (const s of subsOf.get(topic) ?? []) {
      const labels = { subscription: s.config.id };
      m.latency.observeAll(seconds, labels);
      if (newest / 1000 > m.lastEvent.get(labels)) m.lastEvent.set(labels, newest / 1000);
    }
  }
  const byTable = new Map<string, number>();
  for (const r of records) byTable.set(r.table, (byTable.get(r.table) ?? 0) + 1);
  for (const [table, n] of byTable) m.rowsWritten.inc({ table }, n);
  m.batches.inc();
}

/** How long a commit may stay unanswered before it is asked for again, and how often at most. */
export const COMMIT_NUDGE_MS = 2_000;
const COMMIT_NUDGES = 15;

/**
 * Commits, per partition, the offset after the last message of the batch,
 * through the stream's own commit (it merges what is queued, and waits out a
 * group rejoin instead of starting one). The consumer's own `commit` (one
 * request for every partition) rejoins by itself; with it, one test run under
 * load saw a batch's commit stay unanswered for 30 s, which stalls the loop.
 *
 * The stream leaves a commit queued while its consumer is not active (a
 * group rejoin) and flushes it once the rejoin completes; a flush that still
 * finds the consumer inactive leaves it queued with nothing to trigger it
 * again (seen as a pipeline whose rows arrived and whose offsets were never
 * committed). So an unanswered commit is asked for again every
 * COMMIT_NUDGE_MS: the same offsets, merged with the queued ones, flushed as
 * soon as the consumer is active. After COMMIT_NUDGES it counts as failed:
 * not fatal (at-least-once), the next batch's commit covers these offsets.
 */
export async function commit(
  batch: readonly Pick<RawMessage, 'topic' | 'partition' | 'commit'>[],
  ctx: Pick<WorkerContext, 'log'>,
  nudgeMs = COMMIT_NUDGE_MS,
): Promise<boolean> {
  const last = new Map<string, Pick<RawMessage, 'commit'>>();
  for (const msg of batch) last.set(`${msg.topic}\0${msg.partition}`, msg);
  const ask = () => Promise.all([...last.values()].map((msg) => msg.commit())).then(() => true);
  try {
    let answered = ask();
    for (let nudge = 0; nudge <= COMMIT_NUDGES; nudge++) {
      let timer: NodeJS.Timeout | undefined;
      const waited = new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), nudgeMs);
      });
      const done = await Promise.race([answered, waited]).finally(() => clearTimeout(timer));
      if (done) return true;
      answered = Promise.race([answered, ask()]);
    }
    answered.catch(() => undefined);
    ctx.log('warn', 'committing offsets failed', {
      reason: `no answer in ${Math.round((nudgeMs * (COMMIT_NUDGES + 1)) / 1000)} s`,
    });
  } catch (e) {
    // Not fatal: these messages come again after a restart or rebalance (at-least-once).
    ctx.log('warn', 'committing offsets failed', { reason: describeKafkaFailure(e, 'the stream broker') });
  }
  return false;
}
