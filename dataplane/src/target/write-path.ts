import { abortableSleep } from '@sluice/shared/util';
import type { Sink, SinkRecord } from '../contracts.js';
import type { WorkerContext } from '../engine.js';
import { isOutboundRefusal } from '../systems/kafka/broker-policy.js';
import type { TargetMetrics } from './metrics.js';
import { mapMessage, type ConsumedMessage, type PreparedSubscription } from './records.js';
import type { TargetLoopOptions } from './settings.js';

/**
 * Maps a batch with each subscription of its topics and writes it to the
 * Sink, retried with back-off: the write path of backfills (docs/data-plane.md
 * "Backfills"). A backfill replays the partitions side by side, without the
 * live loop's truncate barrier, so the truncates of the stream are left out
 * (applied at one partition's copy they would remove rows of the others
 * replayed from after it): the replay upserts and deletes rows, as before.
 */
export async function writeBatch(batch: readonly ConsumedMessage[], path: WritePath): Promise<void> {
  const mapped = mapBatch(batch, path);
  const records = mapped.records.filter((r) => r.op !== 'truncate');
  if (records.length < mapped.records.length)
    path.ctx.log('info', 'a truncate of the stream is not replayed by a backfill');
  await writeMapped({ ...mapped, records }, path);
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
  for (const r of records) if (r.op !== 'truncate') byTable.set(r.table, (byTable.get(r.table) ?? 0) + 1);
  for (const [table, n] of byTable) m.rowsWritten.inc({ table }, n);
  m.batches.inc();
}
