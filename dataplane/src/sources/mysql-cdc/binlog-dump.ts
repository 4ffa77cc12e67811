import { EventEmitter } from 'node:events';
import type mysql from 'mysql2/promise';

// COM_BINLOG_DUMP over a mysql2 connection, each binary log event handed
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
  /** Whether the server appends a CRC32 to each event (`@master_binlog_checksum` was set). */
  checksum: boolean;
}

const COM_BINLOG_DUMP = 0x12;

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
      this.connection.write(dumpPacket(this.request));
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

function dumpPacket(r: BinlogDumpRequest): Buffer {
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

/** Starts the dump on `conn` (which then runs nothing else). */
export function startBinlogDump(conn: mysql.Connection, request: BinlogDumpRequest): BinlogDump {
  const driver = driverConnection(conn);
  const dump = new BinlogDump(request, driver);
  (driver as unknown as { addCommand(cmd: unknown): void }).addCommand(dump);
  return dump;
}
