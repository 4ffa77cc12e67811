import type { WorkerConfig } from '@sluice/shared/catalog';
import type { Sink } from '../contracts.js';
import type { Engine, WorkerContext } from '../engine.js';
import { describeKafkaFailure } from '../systems/kafka/errors.js';
import { resolveSecrets } from '../secrets.js';
import { commit } from './commit.js';
import { groupsOf, openGroupStream, type Group, type RawMessage } from './consumer-group.js';
import { metricsOf, type TargetMetrics } from './metrics.js';
import { prepareSubscription, type PreparedSubscription } from './records.js';
import { loopOptions, type TargetLoopOptions } from './settings.js';
import { truncateCopy, TruncateBarrier } from './truncate-barrier.js';
import { mapBatch, mapBatchInSlices, writeMapped, type MappedBatch, type WritePath } from './write-path.js';

// The target worker: consume the streams of the enabled subscriptions, map,
// write batches to the Sink, and commit offsets only after the Sink confirmed
// (at-least-once). One Kafka consumer per (cluster, consumer group); each has
// one batch in flight at a time, so offsets are committed in order.

/** Opens the Sink of a target connector from its resolved configuration. */
export type SinkFactory = (config: WorkerConfig, ctx: WorkerContext) => Promise<Sink>;

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
          const run = await runGroup(g, config.connector_id, sink, signal, ctx, m, options);
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

/**
 * Runs one consumer group: messages buffered (consumption paused above
 * `maxBuffered`), mapped and written in batches, offsets committed after.
 */
async function runGroup(
  g: Group,
  connectorId: string,
  sink: Sink,
  signal: AbortSignal,
  ctx: WorkerContext,
  m: TargetMetrics,
  o: TargetLoopOptions,
): Promise<{ done: Promise<void>; close(): Promise<void> }> {
  const { topics, stream: active, assigned, close } = await openGroupStream(g, connectorId, m, o);
  // Truncates wait here for their copies of every partition (truncate-barrier.ts); held messages
  // are not in `buffer`, so the back-pressure below cannot stop the copies still awaited.
  // Only change streams carry truncates: a Kafka source's messages are the user's, headers and all.
  const barrier = g.subs.some((s) => s.changeEvents) ? new TruncateBarrier<RawMessage>(assigned) : null;
  const partialTold = new Set<string>();

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
  active.on('data', (msg: RawMessage) => {
    const copy = barrier && truncateCopy(msg);
    if (copy && barrier.partial(msg.topic, copy.partitions) && !partialTold.has(msg.topic)) {
      partialTold.add(msg.topic);
      ctx.log('warn', 'a truncate is applied by a worker that reads only some partitions of its topic', {
        topic: msg.topic,
        partitions: copy.partitions,
        assigned: assigned(msg.topic)?.length ?? null,
      });
    }
    // The common case, with nothing held and no copy, costs no allocation.
    if (!barrier || (!copy && !barrier.holding)) buffer.push(msg);
    else {
      const go = barrier.admit(msg);
      if (barrier.waiting) go.push(...barrier.reassess());
      for (const ready of go) buffer.push(ready);
    }
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
    // A truncate's copies are written and committed in one batch: a worker that stops between
    // two batches must not restart with some partitions past their copy and others before it
    // (those would wait for copies already committed).
    const last = batch.at(-1);
    const lastCopy = barrier && last && truncateCopy(last);
    while (lastCopy && buffer[0]?.topic === last.topic && truncateCopy(buffer[0])?.id === lastCopy.id)
      batch.push(buffer.shift() as RawMessage);
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
