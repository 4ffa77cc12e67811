import pg from 'pg';

// The parts of the streaming replication protocol and of pgoutput's logical
// replication message format (protocol version 1) the CDC source reads:
// https://www.postgresql.org/docs/current/protocol-replication.html and
// …/protocol-logicalrep-message-formats.html. Values arrive as text; one
// decoder turns them into JSON values for the stream and for the snapshot, so
// a row reads the same whichever way it came.

/** LSNs travel as 64-bit integers; they are shown as `X/Y` (hex halves), as PostgreSQL prints them. */
export const formatLsn = (lsn: bigint): string =>
  `${(lsn >> 32n).toString(16).toUpperCase()}/${(lsn & 0xffffffffn).toString(16).toUpperCase()}`;

export const parseLsn = (text: string): bigint => {
  const [hi = '0', lo = '0'] = text.split('/');
  return (BigInt(`0x${hi}`) << 32n) | BigInt(`0x${lo}`);
};

/** Microseconds between the Unix epoch and PostgreSQL's (2000-01-01). */
const PG_EPOCH_US = 946_684_800_000_000n;
const pgTimeToMs = (us: bigint): number => Number((us + PG_EPOCH_US) / 1000n);

export interface RelationColumn {
  name: string;
  typeOid: number;
  /** Part of the replica identity (the primary key, or every column with REPLICA IDENTITY FULL). */
  identity: boolean;
}

export type PgoutputMessage =
  | { tag: 'begin'; finalLsn: bigint; commitMs: number; xid: number }
  | { tag: 'commit'; commitLsn: bigint; endLsn: bigint; commitMs: number }
  | { tag: 'relation'; relid: number; schema: string; table: string; columns: RelationColumn[] }
  | { tag: 'insert'; relid: number; after: TupleData }
  | { tag: 'update'; relid: number; before: TupleData | null; beforeIsKeyOnly: boolean; after: TupleData }
  | { tag: 'delete'; relid: number; before: TupleData; beforeIsKeyOnly: boolean }
  | { tag: 'truncate'; relids: number[]; cascade: boolean; restartIdentity: boolean }
  | { tag: 'other'; code: string };

/** Column values in relation order: text, null, or `undefined` for an unchanged TOASTed value that was not sent. */
export type TupleData = (string | null | undefined)[];

class Reader {
  offset = 0;
  constructor(private readonly buf: Buffer) {}
  u8(): number {
    return this.buf.readUInt8(this.offset++);
  }
  i16(): number {
    const v = this.buf.readInt16BE(this.offset);
    this.offset += 2;
    return v;
  }
  i32(): number {
    const v = this.buf.readInt32BE(this.offset);
    this.offset += 4;
    return v;
  }
  u32(): number {
    const v = this.buf.readUInt32BE(this.offset);
    this.offset += 4;
    return v;
  }
  u64(): bigint {
    const v = this.buf.readBigUInt64BE(this.offset);
    this.offset += 8;
    return v;
  }
  i64(): bigint {
    const v = this.buf.readBigInt64BE(this.offset);
    this.offset += 8;
    return v;
  }
  cstring(): string {
    const end = this.buf.indexOf(0, this.offset);
    const s = this.buf.toString('utf8', this.offset, end);
    this.offset = end + 1;
    return s;
  }
  bytes(n: number): string {
    const s = this.buf.toString('utf8', this.offset, this.offset + n);
    this.offset += n;
    return s;
  }
  tuple(): TupleData {
    const n = this.i16();
    const values: TupleData = new Array<string | null | undefined>(n);
    for (let i = 0; i < n; i++) {
      const kind = String.fromCharCode(this.u8());
      if (kind === 'n') values[i] = null;
      else if (kind === 'u') values[i] = undefined;
      else if (kind === 't') values[i] = this.bytes(this.u32());
      else throw new Error(`Unexpected tuple value kind "${kind}" (binary mode is not requested)`);
    }
    return values;
  }
}

/** Parses one pgoutput message (the payload of an XLogData). */
export function parsePgoutput(buf: Buffer): PgoutputMessage {
  const r = new Reader(buf);
  const code = String.fromCharCode(r.u8());
  switch (code) {
    case 'B':
      return { tag: 'begin', finalLsn: r.u64(), commitMs: pgTimeToMs(r.i64()), xid: r.u32() };
    case 'C': {
      r.u8(); // flags, unused
      return { tag: 'commit', commitLsn: r.u64(), endLsn: r.u64(), commitMs: pgTimeToMs(r.i64()) };
    }
    case 'R': {
      const relid = r.u32();
      const schema = r.cstring();
      const table = r.cstring();
      r.u8(); // replica identity setting
      const n = r.i16();
      const columns: RelationColumn[] = [];
      for (let i = 0; i < n; i++) {
        const flags = r.u8();
        const name = r.cstring();
        const typeOid = r.u32();
        r.i32(); // type modifier
        columns.push({ name, typeOid, identity: (flags & 1) === 1 });
      }
      return { tag: 'relation', relid, schema, table, columns };
    }
    case 'I': {
      const relid = r.u32();
      r.u8(); // 'N'
      return { tag: 'insert', relid, after: r.tuple() };
    }
    case 'U': {
      const relid = r.u32();
      const kind = String.fromCharCode(r.u8());
      let before: TupleData | null = null;
      const beforeIsKeyOnly = kind === 'K';
      if (kind === 'K' || kind === 'O') {
        before = r.tuple();
        r.u8(); // 'N', the new tuple follows
      }
      return { tag: 'update', relid, before, beforeIsKeyOnly, after: r.tuple() };
    }
    case 'D': {
      const relid = r.u32();
      const kind = String.fromCharCode(r.u8());
      return { tag: 'delete', relid, before: r.tuple(), beforeIsKeyOnly: kind === 'K' };
    }
    case 'T': {
      const n = r.u32();
      const options = r.u8(); // bit 1: CASCADE, bit 2: RESTART IDENTITY
      const relids: number[] = [];
      for (let i = 0; i < n; i++) relids.push(r.u32());
      return { tag: 'truncate', relids, cascade: (options & 1) !== 0, restartIdentity: (options & 2) !== 0 };
    }
    default:
      // Origin, Type and Message carry nothing the change stream needs.
      return { tag: 'other', code };
  }
}

/** Array types whose node-postgres parsers give JSON-safe values (never Dates). */
const ARRAY_OIDS = new Set([1000, 1005, 1007, 1009, 1015, 1021, 1022, 1231]);

/**
 * A column's text value as a JSON value: booleans, integers (int8 beyond
 * 2^53 stays a string), floats, json/jsonb parsed, common arrays; numeric
 * stays a string (its precision), and every other type keeps PostgreSQL's
 * text (timestamps in ISO form, UTC: the session settings of
 * systems/postgres/connection.ts).
 */
export function decodeValue(typeOid: number, text: string): unknown {
  switch (typeOid) {
    case 16:
      return text === 't';
    case 20: {
      const n = Number(text);
      return Number.isSafeInteger(n) ? n : text;
    }
    case 21:
    case 23:
    case 26:
      return Number(text);
    case 700:
    case 701: {
      const n = Number(text);
      return Number.isFinite(n) ? n : text;
    }
    case 114:
    case 3802:
      return JSON.parse(text) as unknown;
    default:
      if (ARRAY_OIDS.has(typeOid)) return pg.types.getTypeParser(typeOid, 'text')(text) as unknown;
      return text;
  }
}

/** The values of a tuple as a row object; unchanged TOASTed values (not sent) are left out. */
export function tupleToRow(columns: readonly RelationColumn[], tuple: TupleData): Record<string, unknown> {
  const row: Record<string, unknown> = {};
  columns.forEach((c, i) => {
    const v = tuple[i];
    if (v === undefined) return;
    row[c.name] = v === null ? null : decodeValue(c.typeOid, v);
  });
  return row;
}

/** XLogData (`w`) or primary keepalive (`k`) of a CopyData chunk. */
export type ReplicationFrame =
  | { kind: 'xlog'; start: bigint; payload: Buffer }
  | { kind: 'keepalive'; walEnd: bigint; replyRequested: boolean }
  | { kind: 'unknown' };

export function parseFrame(chunk: Buffer): ReplicationFrame {
  if (chunk[0] === 0x77)
    return { kind: 'xlog', start: chunk.readBigUInt64BE(1), payload: chunk.subarray(25) };
  if (chunk[0] === 0x6b)
    return { kind: 'keepalive', walEnd: chunk.readBigUInt64BE(1), replyRequested: chunk[17] === 1 };
  return { kind: 'unknown' };
}

/** A standby status update: everything up to `lsn` written, flushed and applied (the acknowledgement). */
export function standbyStatus(lsn: bigint, replyRequested = false): Buffer {
  const buf = Buffer.alloc(34);
  buf.write('r', 0);
  buf.writeBigUInt64BE(lsn, 1);
  buf.writeBigUInt64BE(lsn, 9);
  buf.writeBigUInt64BE(lsn, 17);
  buf.writeBigInt64BE(BigInt(Date.now()) * 1000n - PG_EPOCH_US, 25);
  buf.writeUInt8(replyRequested ? 1 : 0, 33);
  return buf;
}
