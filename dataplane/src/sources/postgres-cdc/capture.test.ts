import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createScratchDatabase, describeWithPostgres, type ScratchDatabase } from '@sluice/testing/postgres';
import type { ChangeEvent } from '../../contracts.js';
import { cdcNames } from '@sluice/shared/connectors';
import { startPostgresCdc } from './capture.js';
import { dropPostgresCdc } from './cleanup.js';
import type { PostgresCdcCapture } from './contract.js';
import { formatLsn, parseLsn } from '../pgoutput.js';

describe('cdcNames', () => {
  it('derives valid, distinct slot and publication names from the connector id', () => {
    const a = cdcNames('Orders-DB 1');
    expect(a.slot).toMatch(/^sluice_orders_db_1_[0-9a-f]{8}$/);
    expect(a.publication).toBe(a.slot);
    expect(cdcNames('orders_db_1').slot).not.toBe(a.slot);
    expect(cdcNames('x'.repeat(200)).slot.length).toBeLessThanOrEqual(63);
    expect(cdcNames('c', { slot_name: 'mine', publication_name: 'Pub' })).toEqual({
      slot: 'mine',
      publication: 'Pub',
    });
  });

  it('prints LSNs as PostgreSQL does', () => {
    expect(formatLsn(parseLsn('16/B374D848'))).toBe('16/B374D848');
  });
});

/** Collects events; `next(n)` waits until n more have arrived (bounded by jest's timeout, never by a sleep). */
function collector(hook?: (event: ChangeEvent) => Promise<void>) {
  const events: ChangeEvent[] = [];
  let acked = 0n;
  let ackWaiters: { lsn: bigint; resolve: () => void }[] = [];
  let waiters: { count: number; resolve: () => void }[] = [];
  return {
    events,
    onEvent: async (event: ChangeEvent) => {
      await hook?.(event);
      events.push(event);
      waiters = waiters.filter((w) => (events.length >= w.count ? (w.resolve(), false) : true));
    },
    onAcknowledge: (lsn: string) => {
      acked = parseLsn(lsn);
      ackWaiters = ackWaiters.filter((w) => (acked > w.lsn ? (w.resolve(), false) : true));
    },
    /** Waits until the server was told everything up to and including the event at `position`. */
    untilAcknowledged: (position: string) =>
      new Promise<void>((resolve) =>
        acked > parseLsn(position) ? resolve() : ackWaiters.push({ lsn: parseLsn(position), resolve }),
      ),
    until: (count: number) =>
      new Promise<void>((resolve) => (events.length >= count ? resolve() : waiters.push({ count, resolve }))),
  };
}

describeWithPostgres('PostgreSQL CDC source on a real server (logical replication, pgoutput)', () => {
  let db: ScratchDatabase;
  const connectorId = 'conn-cdc-test';
  const tables = [{ entry: 'public.orders', datamodelId: 'dm-orders' }];
  const names = cdcNames(connectorId);

  beforeAll(async () => {
    db = await createScratchDatabase('sluice_test_cdc');
    await db.client.query('create table orders (id int primary key, name text, amount numeric, tags jsonb)');
    await db.client.query('create table other (id int primary key)');
    await db.client.query(
      `insert into orders values (1, 'ada', 10.50, '{"vip":true}'), (2, 'bob', 20, null)`,
    );
  });
  afterAll(async () => {
    await dropPostgresCdc(db.settings, { connectorId }).catch(() => undefined);
    await db?.drop();
  });

  const run = async ({ onEvent, onAcknowledge }: ReturnType<typeof collector>) => {
    const ac = new AbortController();
    const capture: PostgresCdcCapture = await startPostgresCdc(
      db.settings,
      { connectorId, tables, onEvent, onAcknowledge },
      ac.signal,
    );
    return { capture, stop: async () => (ac.abort(), capture.done) };
  };

  it('snapshots the existing rows, then streams inserts, updates and deletes with before/after/key', async () => {
    let first = true;
    // While the first snapshot row is being published, a row is committed:
    // it must come exactly once, from the stream, not from the snapshot.
    const c = collector(async () => {
      if (!first) return;
      first = false;
      await db.client.query(`insert into orders values (10, 'during snapshot', 1, null)`);
    });
    const { stop } = await run(c);
    await c.until(3);
    expect(c.events.map((e) => [e.op, e.key, e.source.snapshot])).toEqual([
      ['r', { id: 1 }, true],
      ['r', { id: 2 }, true],
      ['c', { id: 10 }, false],
    ]);
    expect(c.events[0]).toMatchObject({
      before: null,
      after: { id: 1, name: 'ada', amount: '10.50', tags: { vip: true } },
      source: { connector_id: connectorId, datamodel_id: 'dm-orders', entry: 'public.orders' },
    });

    await db.client.query(`insert into orders values (3, 'cy', 3, null)`);
    await db.client.query(`update orders set name = 'ada l.' where id = 1`);
    await db.client.query(`delete from orders where id = 2`);
    await db.client.query(`insert into other values (1)`);
    await c.until(6);
    const streamed = c.events.slice(3);
    expect(streamed.map((e) => e.op)).toEqual(['c', 'u', 'd']);
    expect(streamed[0]).toMatchObject({
      before: null,
      after: { id: 3, name: 'cy', amount: '3' },
      key: { id: 3 },
    });
    expect(streamed[1]).toMatchObject({ after: { id: 1, name: 'ada l.' }, key: { id: 1 } });
    expect(streamed[2]).toMatchObject({ before: { id: 2 }, after: null, key: { id: 2 } });
    const positions = streamed.map((e) => parseLsn(e.source.position));
    expect(positions[0]! < positions[1]! && positions[1]! < positions[2]!).toBe(true);
    expect(streamed.every((e) => e.source.ts_ms > Date.now() - 600_000)).toBe(true);
    await c.untilAcknowledged(streamed[2]!.source.position);
    await stop();
  });

  it('restarts from the acknowledged position: no snapshot again, nothing lost, nothing re-emitted', async () => {
    await db.client.query(`insert into orders values (4, 'while stopped', 4, null)`);
    const c = collector();
    const { stop, capture } = await run(c);
    await db.client.query(`update orders set amount = 44 where id = 4`);
    await c.until(2);
    expect(c.events.map((e) => [e.op, e.key])).toEqual([
      ['c', { id: 4 }],
      ['u', { id: 4 }],
    ]);
    await c.untilAcknowledged(c.events[1]!.source.position);
    await stop();
    expect(parseLsn(capture.acknowledgedLsn())).toBeGreaterThanOrEqual(
      parseLsn(c.events[1]!.source.position),
    );
  });

  it('re-emits a change whose publication failed (it was never acknowledged)', async () => {
    const failing = collector(async (e) => {
      if (e.key.id === 5) throw new Error('broker unavailable');
    });
    const { capture } = await run(failing);
    await db.client.query(`insert into orders values (5, 'retry me', 5, null)`);
    await expect(capture.done).rejects.toThrow(/broker unavailable/);

    const c = collector();
    const { stop } = await run(c);
    await c.until(1);
    expect(c.events.map((e) => [e.op, e.key])).toEqual([['c', { id: 5 }]]);
    await c.untilAcknowledged(c.events[0]!.source.position);
    await stop();
  });

  it('publishes a burst of transactions in few flushes, and acknowledges none before the flush carrying its events', async () => {
    const log: string[] = [];
    const ac = new AbortController();
    let published = 0;
    let buffered = 0;
    const capture = await startPostgresCdc(
      db.settings,
      {
        connectorId,
        tables,
        onEvent: async () => {
          buffered += 1;
        },
        // A slow broker: the stream piles up meanwhile, so commits are acknowledged together.
        flush: async () => {
          await new Promise((r) => setTimeout(r, 20));
          published += buffered;
          buffered = 0;
          log.push('flush');
        },
        onAcknowledge: () => {
          // Everything handed over before an acknowledgement is published by then.
          if (buffered !== 0) log.push('ack-before-publish');
          log.push('ack');
        },
      },
      ac.signal,
    );
    const N = 200;
    for (let i = 0; i < N; i++)
      await db.client.query(`insert into orders values ($1, 'burst', 1, null)`, [1000 + i]);
    const deadline = Date.now() + 30_000;
    while (published < N && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    ac.abort();
    await capture.done;
    expect(published).toBe(N);
    expect(log).not.toContain('ack-before-publish');
    const flushes = log.filter((l) => l === 'flush').length;
    console.log(`${N} one-row transactions: ${flushes} flushes`);
    expect(flushes).toBeLessThan(N / 4);
  });

  it('drop removes the slot and the publication', async () => {
    await dropPostgresCdc(db.settings, { connectorId });
    const slots = await db.client.query('select 1 from pg_replication_slots where slot_name = $1', [
      names.slot,
    ]);
    const pubs = await db.client.query('select 1 from pg_publication where pubname = $1', [
      names.publication,
    ]);
    expect([slots.rowCount, pubs.rowCount]).toEqual([0, 0]);
    // Dropping what is already gone is fine (a connector deleted twice).
    await dropPostgresCdc(db.settings, { connectorId });
  });

  it('refuses a whitelisted table that does not exist, naming it', async () => {
    await expect(
      startPostgresCdc(
        db.settings,
        {
          connectorId: 'other',
          tables: [{ entry: 'public.missing', datamodelId: 'x' }],
          onEvent: async () => {},
        },
        new AbortController().signal,
      ),
    ).rejects.toThrow('Table public.missing does not exist in the source database');
  });
});
