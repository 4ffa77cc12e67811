import { describe, expect, it } from '@jest/globals';
import { type WorkerConfig } from '@sluice/shared/catalog';
import { MetricsRegistry } from '@sluice/shared/metrics';
import { mapMessage, prepareSubscription, type ConsumedMessage } from './records.js';
import { metricsOf } from './metrics.js';
import { mapBatch, mapBatchInSlices } from './write-path.js';

type Sub = NonNullable<WorkerConfig['subscriptions']>[number];

const sub = (over: Partial<Sub> = {}): Sub => ({
  id: 's1',
  datamodel_id: 'dm1',
  topic: 'in',
  stream: { kind: 'kafka', bootstrap_servers: 'k:9092', include_metadata: false },
  target_table_name: 'out',
  mapper_config: [],
  consumer_id: 'g',
  enabled: true,
  backfill: false,
  error_table: { enabled: true, name: 'errors' },
  ...over,
});

const msg = (value: unknown, over: Partial<ConsumedMessage> = {}): ConsumedMessage => ({
  topic: 'in',
  partition: 1,
  offset: 41n,
  timestamp: 1_700_000_000_000n,
  key: Buffer.from('k-1'),
  value: Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)),
  headers: new Map([[Buffer.from('h'), Buffer.from('v')]]),
  ...over,
});

describe('mapping consumed messages to sink records', () => {
  it('an empty rule set passes the message through, keyed by all its columns', () => {
    const out = mapMessage(msg({ a: 1, b: 'x' }), [prepareSubscription(sub())]);
    expect(out.records).toEqual([
      { op: 'upsert', table: 'out', row: { a: 1, b: 'x' }, keyColumns: ['a', 'b'], wholeRowKey: true },
    ]);
    expect(out.producedMs).toBe(1_700_000_000_000);
  });

  it('include_metadata adds the Kafka coordinates under _kafka, readable by mapper paths', () => {
    const s = sub({
      stream: { kind: 'kafka', bootstrap_servers: 'k:9092', include_metadata: true },
      mapper_config: [
        { key: 'a', path: 'a', primary_key: true },
        { key: 'offset', path: '_kafka|offset' },
        { key: 'key', path: '_kafka|key' },
        { key: 'h', path: '_kafka|headers|h' },
      ],
    });
    const out = mapMessage(msg({ a: 1 }), [prepareSubscription(s)]);
    expect(out.records[0]).toEqual({
      op: 'upsert',
      table: 'out',
      row: { a: 1, offset: '41', key: 'k-1', h: 'v' },
      keyColumns: ['a'],
    });
  });

  it('change events of database sources: after for upserts, before for deletes, emitted_ms for latency', () => {
    const s = prepareSubscription(
      sub({ stream: { kind: 'platform' }, mapper_config: [{ key: 'id', path: 'id', primary_key: true }] }),
    );
    const del = mapMessage(msg({ op: 'd', before: { id: 7 }, after: null, key: { id: 7 }, emitted_ms: 5 }), [
      s,
    ]);
    expect(del.records).toEqual([{ op: 'delete', table: 'out', row: { id: 7 }, keyColumns: ['id'] }]);
    expect(del.producedMs).toBe(5);
    const ins = mapMessage(msg({ op: 'c', before: null, after: { id: 8 }, key: { id: 8 }, emitted_ms: 6 }), [
      s,
    ]);
    expect(ins.records).toEqual([{ op: 'upsert', table: 'out', row: { id: 8 }, keyColumns: ['id'] }]);
  });

  it('a truncate event becomes one truncate of each subscription table, past the mapper (it has no row)', () => {
    const rules = [
      { key: 'id', path: 'id', cast: 'int', primary_key: true },
      { key: 'qty', path: 'qty', cast: 'int', nullable: false },
    ];
    const keyed = prepareSubscription(sub({ stream: { kind: 'platform' }, mapper_config: rules }));
    const identity = prepareSubscription(
      sub({ id: 's2', stream: { kind: 'platform' }, target_table_name: 'copy' }),
    );
    const event = {
      op: 't',
      before: null,
      after: null,
      key: {},
      truncate: { cascade: true, restart_identity: false },
      emitted_ms: 9,
    };
    const out = mapMessage(msg(event), [keyed, identity]);
    expect(out.failures).toEqual([]);
    expect(out.records).toEqual([
      { op: 'truncate', table: 'out', row: {}, keyColumns: ['id'] },
      { op: 'truncate', table: 'copy', row: {}, keyColumns: [] },
    ]);
    expect(out.producedMs).toBe(9);
    // The mapper given no row at all answers rows with an error, it does not throw.
    expect(() => keyed.mapper?.apply({})).not.toThrow();
  });

  it('a delete needs only its key: a required non-key column missing from `before` is no failure; a missing key is', () => {
    const s = prepareSubscription(
      sub({
        stream: { kind: 'platform' },
        mapper_config: [
          { key: 'id', path: 'id', cast: 'int', primary_key: true },
          { key: 'qty', path: 'qty', cast: 'int', nullable: false },
        ],
      }),
    );
    const del = mapMessage(msg({ op: 'd', before: { id: '7' }, after: null, key: { id: 7 } }), [s]);
    expect(del.failures).toEqual([]);
    expect(del.records).toEqual([{ op: 'delete', table: 'out', row: { id: 7 }, keyColumns: ['id'] }]);
    // Without its key a delete cannot be applied: it is a failure, in the error table.
    const keyless = mapMessage(msg({ op: 'd', before: { qty: 1 }, after: null, key: {} }), [s]);
    expect(keyless.failures).toHaveLength(1);
    expect(keyless.records.map((r) => r.table)).toEqual(['errors']);
    // An upsert missing the required column is still a failure.
    const upsert = mapMessage(msg({ op: 'c', before: null, after: { id: '8' }, key: { id: 8 } }), [s]);
    expect(upsert.failures).toHaveLength(1);
    expect(upsert.records.map((r) => r.table)).toEqual(['errors']);
  });

  it('not-JSON messages and rows with an error key go to the error table with the original message and the reason', () => {
    const s = prepareSubscription(sub({ mapper_config: [{ key: 'n', path: 'n', cast: 'int' }] }));
    const bad = mapMessage(msg('{oops'), [s]);
    expect(bad.failures).toEqual([
      {
        subscription: 's1',
        kind: 'not_json',
        reason: expect.stringMatching(/^not JSON/),
        index: 0,
        row: null,
      },
    ]);
    expect(bad.records).toEqual([
      expect.objectContaining({
        table: 'errors',
        keyColumns: ['subscription_id', 'source_topic', 'source_partition', 'source_offset', 'row_index'],
        row: expect.objectContaining({
          message: '{oops',
          source_offset: '41',
          row: null,
          message_key: 'k-1',
        }),
      }),
    ]);
    const failed = mapMessage(msg({ n: 'many' }), [s]);
    expect(failed.failures[0]).toMatchObject({ kind: 'mapper', index: 0, row: { n: null } });
    expect(failed.records[0]?.row).toMatchObject({ row: { n: null, error: expect.any(String) } });
  });

  it('without an error table, failures are reported (logs, metrics) and nothing is written', () => {
    const s = prepareSubscription(sub({ error_table: { enabled: false } }));
    const out = mapMessage(msg(''), [s]);
    expect(out.records).toEqual([]);
    expect(out.failures).toEqual([
      { subscription: 's1', kind: 'empty', reason: 'empty message (no value)', index: 0, row: null },
    ]);
  });

  it('only the subscriptions of the message topic see it; an invalid mapper is refused at start', () => {
    const other = prepareSubscription(sub({ id: 's2', topic: 'elsewhere' }));
    expect(mapMessage(msg({ a: 1 }), [other]).records).toEqual([]);
    expect(() => prepareSubscription(sub({ mapper_config: [{ key: 'error', path: 'x' }] }))).toThrow(
      /subscription s1: invalid mapper/,
    );
  });
});

describe('mapping a batch in slices (while the previous batch is written)', () => {
  it('gives the records of mapBatch, in order, and lets I/O callbacks run between slices', async () => {
    const ctx = { metrics: new MetricsRegistry(), log: () => undefined };
    const s = prepareSubscription(
      sub({
        mapper_config: [
          { key: 'n', path: 'n', primary_key: true },
          { key: 'text', path: 'n', cast: 'string' },
        ],
      }),
    );
    const path = { subsOf: new Map([['in', [s]]]), ctx, m: metricsOf(ctx) };
    const batch = Array.from({ length: 120 }, (_, n) =>
      msg(n === 7 ? 'not json' : { n }, { offset: BigInt(n) }),
    );
    // A callback that queues itself on every turn of the event loop (a timer
    // would need a millisecond to pass, which three fast slices may not take).
    let immediates = 0;
    let counting = true;
    const count = () => {
      immediates++;
      if (counting) setImmediate(count);
    };
    setImmediate(count);
    const sliced = await mapBatchInSlices(batch, path);
    counting = false;
    // The same records (the error row's failed_at aside: a clock reading), in the same order.
    const comparable = (records: { row: Record<string, unknown> }[]) =>
      records.map((r) => ({ ...r, row: { ...r.row, failed_at: undefined } }));
    const whole = mapBatch(batch, path);
    expect(comparable(sliced.records)).toEqual(comparable(whole.records));
    expect(sliced.records).toHaveLength(120);
    expect(sliced.produced).toEqual(whole.produced);
    expect(sliced.produced).toHaveLength(120);
    // 120 messages are three slices: the event loop turned between them.
    expect(immediates).toBeGreaterThan(0);
  });
});
