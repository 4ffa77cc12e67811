import { EventEmitter } from 'node:events';
import type mysql from 'mysql2/promise';
import { encodeGtidSet, parseGtidSet } from './gtid-set.js';

// COM_BINLOG_DUMP (or MySQL's COM_BINLOG_DUMP_GTID) over a mysql2 connection, each binary log event handed
// over as its raw bytes (header and body, checksum stripped). mysql2's own
// binlog command decodes four event types and drops the bytes of the others,
// so the command is ours: an object the driver's command queue runs
// (`execute(packet)` per packet the server sends), written against the
// driver's packet and connection surface below.

interface DriverPacket {
  buffer: Buffer;
  offset: number;
  end: number;
  isError(): boolean;
  isEOF(): boolean;
  asError(encoding?: string): Error;
}

interface DriverConnection {
  _resetSequenceId(): void;
  _bumpSequenceId(n: number): void;
  write(buffer: Buffer): void;
  pause(): void;
  resume(): void;
  clientEncoding?: string;
}

/** The driver's connection under its promise wrapper. */
export function driverConnection(conn: mysql.Connection): DriverConnection {
  return (conn as unknown as { connection: DriverConnection }).connection;
}

export interface BinlogDumpRequest {
  /** Replica id of this client (`server_id`), unique among the server's replicas. */
  serverId: number;
  /** File and offset to start at; MariaDB ignores them when `@slave_connect_state` is set. */
  file: string;
  position: number;
  /**
   * MySQL's executed GTID set (`uuid:1-N,…`): when set, the dump is
   * COM_BINLOG_DUMP_GTID and the server sends every transaction not in it
   * (file and offset are not sent).
   */
  mysqlGtidSet?: string;
  /** Whether the server appends a CRC32 to each event (`@master_binlog_checksum` was set). */
  checksum: boolean;
}

const COM_BINLOG_DUMP = 0x12;
const COM_BINLOG_DUMP_GTID = 0x1e;
/** COM_BINLOG_DUMP_GTID flag: the GTID set's data follows. */
const BINLOG_THROUGH_GTID = 0x04;

/**
 * The running dump: emits `event` (Buffer), `error`, and `end` when the
 * server ends it. `pause`/`resume` stop reading the socket (back-pressure).
 */
export class BinlogDump extends EventEmitter {
  private started = false;

  constructor(
    private readonly request: BinlogDumpRequest,
    private readonly connection: DriverConnection,
  ) {
    super();
  }

  /** Called by the driver for the command's start (no packet), then for every packet. */
  execute(packet: DriverPacket | undefined): boolean {
    if (!this.started) {
      this.started = true;
      this.connection._resetSequenceId();
      this.connection.write(
        this.request.mysqlGtidSet
          ? dumpGtidPacket(this.request, this.request.mysqlGtidSet)
          : dumpPacket(this.request),
      );
      this.connection._bumpSequenceId(1);
      return false;
    }
    if (!packet) return false;
    if (packet.isError()) {
      this.emit('error', packet.asError(this.connection.clientEncoding));
      return true;
    }
    if (packet.isEOF()) {
      this.emit('end');
      return true;
    }
    // An OK byte, then the event; the trailing CRC32 is not the event's.
    const end = this.request.checksum ? packet.end - 4 : packet.end;
    this.emit('event', Buffer.from(packet.buffer.subarray(packet.offset + 1, end)));
    return false;
  }

  pause(): void {
    this.connection.pause();
  }

  resume(): void {
    this.connection.resume();
  }
}

/** The packet (header and payload) of COM_BINLOG_DUMP. */
export function dumpPacket(r: BinlogDumpRequest): Buffer {
  const name = Buffer.from(r.file, 'utf8');
  const length = 11 + name.length;
  const buf = Buffer.alloc(4 + length);
  buf.writeUIntLE(length, 0, 3);
  buf.writeUInt8(0, 3);
  buf.writeUInt8(COM_BINLOG_DUMP, 4);
  buf.writeUInt32LE(r.position, 5);
  buf.writeUInt16LE(0, 9); // flags: block at the end of the log (no BINLOG_DUMP_NON_BLOCK)
  buf.writeUInt32LE(r.serverId, 11);
  name.copy(buf, 15);
  return buf;
}

/**
 * The packet of COM_BINLOG_DUMP_GTID: flags, server id, an empty file name
 * (its length, 4 bytes), position 4 (8 bytes), then the encoded GTID set and
 * its length (4 bytes); the server starts at the oldest file holding a
 * transaction the set lacks.
 */
export function dumpGtidPacket(r: BinlogDumpRequest, gtidSet: string): Buffer {
  const sids = encodeGtidSet(parseGtidSet(gtidSet));
  const payload = Buffer.alloc(1 + 2 + 4 + 4 + 8 + 4 + sids.length);
  let pos = payload.writeUInt8(COM_BINLOG_DUMP_GTID, 0);
  pos = payload.writeUInt16LE(BINLOG_THROUGH_GTID, pos); // blocking at the end of the log
  pos = payload.writeUInt32LE(r.serverId, pos);
  pos = payload.writeUInt32LE(0, pos); // file name length: none
  pos = payload.writeBigUInt64LE(4n, pos);
  pos = payload.writeUInt32LE(sids.length, pos);
  sids.copy(payload, pos);
  const header = Buffer.alloc(4);
  header.writeUIntLE(payload.length, 0, 3);
  return Buffer.concat([header, payload]);
}

/** Starts the dump on `conn` (which then runs nothing else). */
export function startBinlogDump(conn: mysql.Connection, request: BinlogDumpRequest): BinlogDump {
  const driver = driverConnection(conn);
  const dump = new BinlogDump(request, driver);
  (driver as unknown as { addCommand(cmd: unknown): void }).addCommand(dump);
  return dump;
}
