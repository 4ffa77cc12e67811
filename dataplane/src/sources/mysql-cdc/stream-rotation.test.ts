import { describe, expect, it } from '@jest/globals';
import type mysql from 'mysql2/promise';
import { workerOutboundPolicy } from '../../outbound.js';
import { EVENT, HEADER_LENGTH } from './binlog-events.js';
import type { BinlogPosition } from './position.js';
import { BinlogStream } from './stream.js';

// An idle capture after the server rotates its binary log: the position it
// records moves to the new log at the next heartbeat, so the guard against
// purges (and a restart) no longer needs the old log, which the server may
// purge. The server's fake ROTATE at the start of a dump names where the
// dump starts and moves nothing. On the live shared server other tests'
// writes move the position too, so the events are made here, as the dump
// hands them over (header and body, checksum removed).

function event(type: number, nextPosition: number, body: Buffer, timestamp = 1_700_000_000): Buffer {
  const header = Buffer.alloc(HEADER_LENGTH);
  header.writeUInt32LE(timestamp, 0);
  header.writeUInt8(type, 4);
  header.writeUInt32LE(1, 5);
  header.writeUInt32LE(HEADER_LENGTH + body.length, 9);
  header.writeUInt32LE(nextPosition, 13);
  return Buffer.concat([header, body]);
}

function rotate(file: string, position: number, nextPosition: number, timestamp?: number): Buffer {
  const body = Buffer.alloc(8 + Buffer.byteLength(file));
  body.writeBigUInt64LE(BigInt(position), 0);
  body.write(file, 8);
  return event(EVENT.ROTATE, nextPosition, body, timestamp);
}

const heartbeat = () => event(EVENT.HEARTBEAT, 0, Buffer.from('binlog.000008'), 0);

describe('an idle capture across a binary log rotation', () => {
  const start: BinlogPosition = { file: 'binlog.000007', offset: 500, gtid: '0-1-5' };
  const stream = () => {
    const saved: BinlogPosition[] = [];
    const s = new BinlogStream(
      {
        readShape: async () => null,
        collations: async () => new Map(),
        dumpConnection: {} as mysql.Connection,
        serverId: 100_001,
        where: '127.0.0.1:3306',
      },
      {
        engine: 'MariaDB',
        connectorId: 'c',
        tables: [],
        onEvent: async () => undefined,
        flush: async () => undefined,
        loadPosition: async () => start,
        savePosition: async (p) => void saved.push(p),
        policy: workerOutboundPolicy(),
      },
      new Map(),
      start,
      new AbortController().signal,
    );
    // What the dump's consumer does with each event it received (the socket is not needed here).
    const handle = (e: Buffer) =>
      (s as unknown as { handle(e: Buffer, queueEmpty: boolean): Promise<void> }).handle(e, true);
    return { s, saved, handle };
  };

  it('records the new log once idle after a real rotation', async () => {
    const { s, saved, handle } = stream();
    await handle(rotate('binlog.000007', 500, 0, 0));
    await handle(heartbeat());
    expect(saved).toEqual([]);
    // The rotation logged at the end of binlog.000007, after its last commit.
    await handle(rotate('binlog.000008', 4, 900));
    await handle(heartbeat());
    expect(saved).toEqual([{ file: 'binlog.000008', offset: 4, gtid: '0-1-5', tables: {} }]);
    expect(s.recorded).toEqual({ file: 'binlog.000008', offset: 4, gtid: '0-1-5' });
    expect(s.readPosition).toEqual({ file: 'binlog.000008', offset: 4, gtid: '0-1-5' });
  });
});
