import { uuidText } from './gtid-set.js';

// The binary log events the capture reads, decoded from their bytes (MySQL
// 5.6+ and MariaDB 10.x, binlog version 4): the common 19-byte header, then
// per type. Row values are decoded apart (row-values.ts), once the table's
// columns are known. References: MySQL's "Binary Log" internals
// (libbinlogevents) and MariaDB's "Replication Protocol" pages.

export const EVENT = {
  QUERY: 2,
  ROTATE: 4,
  FORMAT_DESCRIPTION: 15,
  XID: 16,
  TABLE_MAP: 19,
  WRITE_ROWS_V1: 23,
  UPDATE_ROWS_V1: 24,
  DELETE_ROWS_V1: 25,
  HEARTBEAT: 27,
  WRITE_ROWS_V2: 30,
  UPDATE_ROWS_V2: 31,
  DELETE_ROWS_V2: 32,
  MYSQL_GTID: 33,
  MYSQL_ANONYMOUS_GTID: 34,
  /** An update whose JSON columns may be logged as diffs (binlog_row_value_options=PARTIAL_JSON). */
  MYSQL_PARTIAL_UPDATE_ROWS: 39,
  MYSQL_TRANSACTION_PAYLOAD: 40,
  /** The end of an XA transaction's first part (XA PREPARE), or of a one-phase XA COMMIT. */
  XA_PREPARE: 38,
  /** A GTID with a tag (MySQL 8.3+: `uuid:tag:gno`). */
  MYSQL_GTID_TAGGED: 42,
  MARIADB_GTID: 162,
  MARIADB_QUERY_COMPRESSED: 165,
  MARIADB_WRITE_ROWS_COMPRESSED_V1: 169,
  MARIADB_DELETE_ROWS_COMPRESSED_V1: 171,
} as const;

export interface EventHeader {
  /** Seconds since the epoch (the statement's start on the server). */
  timestamp: number;
  type: number;
  serverId: number;
  /** Offset of the next event in the file (0 for events the server makes up, e.g. a fake ROTATE). */
  nextPosition: number;
  flags: number;
}

export const HEADER_LENGTH = 19;

export function parseHeader(event: Buffer): EventHeader {
  return {
    timestamp: event.readUInt32LE(0),
    type: event.readUInt8(4),
    serverId: event.readUInt32LE(5),
    nextPosition: event.readUInt32LE(13),
    flags: event.readUInt16LE(17),
  };
}

/** A cursor over a buffer, little-endian as the binary log is (big-endian where a field says so). */
export class Reader {
  constructor(
    readonly buf: Buffer,
    public pos = 0,
  ) {}

  u8(): number {
    return this.buf.readUInt8(this.pos++);
  }
  u16(): number {
    const v = this.buf.readUInt16LE(this.pos);
    this.pos += 2;
    return v;
  }
  uint(bytes: number): number {
    const v = this.buf.readUIntLE(this.pos, bytes);
    this.pos += bytes;
    return v;
  }
  u64(): bigint {
    const v = this.buf.readBigUInt64LE(this.pos);
    this.pos += 8;
    return v;
  }
  bytes(n: number): Buffer {
    if (this.pos + n > this.buf.length) throw new RangeError('binary log event shorter than its fields');
    const v = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return v;
  }
  /** A length-encoded integer (1, 3, 4 or 9 bytes). */
  lenenc(): number {
    const first = this.u8();
    if (first < 0xfb) return first;
    if (first === 0xfc) return this.uint(2);
    if (first === 0xfd) return this.uint(3);
    return Number(this.u64());
  }
  rest(): Buffer {
    return this.bytes(this.buf.length - this.pos);
  }
}

export interface RotateEvent {
  position: number;
  file: string;
}

export function parseRotate(body: Buffer): RotateEvent {
  const r = new Reader(body);
  const position = Number(r.u64());
  return { position, file: r.rest().toString('utf8') };
}

export interface QueryEvent {
  schema: string;
  query: string;
}

export function parseQuery(body: Buffer): QueryEvent {
  const r = new Reader(body);
  r.pos = 8; // thread id, execution time
  const schemaLength = r.u8();
  r.pos += 2; // error code
  const statusLength = r.u16();
  r.pos += statusLength;
  const schema = r.bytes(schemaLength).toString('utf8');
  r.pos += 1;
  return { schema, query: r.rest().toString('utf8') };
}

export interface MariadbGtidEvent {
  domain: number;
  sequence: bigint;
  /** No BEGIN … COMMIT around it: one statement (DDL) is the whole group. */
  standalone: boolean;
  /** The group is an XA transaction's first part (XA START … XA PREPARE). */
  preparedXa: boolean;
}

export function parseMariadbGtid(body: Buffer): MariadbGtidEvent {
  const r = new Reader(body);
  const sequence = r.u64();
  const domain = r.uint(4);
  const flags = r.u8();
  // FL_PREPARED_XA (64): the group is an XA transaction's first part, ended by XA_PREPARE.
  return { domain, sequence, standalone: (flags & 1) !== 0, preparedXa: (flags & 64) !== 0 };
}

export interface XaPrepareEvent {
  /** XA COMMIT … ONE PHASE: the transaction is committed here, not prepared. */
  onePhase: boolean;
  /** The XID as the server writes it in XA statements of the log: `X'gtrid',X'bqual',formatID`. */
  xid: string;
}

/** XA_PREPARE_LOG_EVENT: one_phase (1 byte), formatID, gtrid_length, bqual_length (4 bytes each), then the two parts. */
export function parseXaPrepare(body: Buffer): XaPrepareEvent {
  const r = new Reader(body);
  const onePhase = r.u8() !== 0;
  const formatId = r.buf.readInt32LE(r.pos);
  r.pos += 4;
  const gtridLength = r.uint(4);
  const bqualLength = r.uint(4);
  const gtrid = r.bytes(gtridLength);
  const bqual = r.bytes(bqualLength);
  return { onePhase, xid: xidText(gtrid, bqual, formatId) };
}

/** An XID in the form the server logs XA statements with (hex parts, upper case). */
export function xidText(gtrid: Buffer, bqual: Buffer, formatId: number): string {
  return `X'${gtrid.toString('hex').toUpperCase()}',X'${bqual.toString('hex').toUpperCase()}',${formatId}`;
}

export interface MysqlGtidEvent {
  /** The source UUID, lower case with dashes. */
  uuid: string;
  /** The transaction's number at its source. */
  gno: bigint;
}

/** GTID_LOG_EVENT: a flags byte, the source UUID (16 bytes), the transaction number (8 bytes); then commit-order fields not needed here. */
export function parseMysqlGtid(body: Buffer): MysqlGtidEvent {
  const r = new Reader(body, 1);
  const uuid = uuidText(r.bytes(16));
  return { uuid, gno: r.u64() };
}

export interface TableMapEvent {
  tableId: number;
  schema: string;
  table: string;
  /** The binary log type of each column. */
  types: number[];
  /** The type's metadata of each column, as read (see columnMeta). */
  meta: ColumnMeta[];
  /** Column names, when the server logs them (`binlog_row_metadata=FULL`). */
  names: string[] | null;
  /**
   * The optional metadata fields after the null bitmap (MySQL 8.0.1+,
   * MariaDB 10.5+; `binlog_row_metadata` MINIMAL or FULL), each its type and
   * a copy of its value; read by table-map-metadata.ts when a map is new.
   */
  optional: OptionalField[];
}

export interface OptionalField {
  type: number;
  value: Buffer;
}

/** Optional metadata field COLUMN_NAME of a table map. */
const OPTIONAL_COLUMN_NAME = 4;

/** The type-length-value fields after the null bitmap, copied: a map outlives the packet it came in. */
function optionalFields(r: Reader): OptionalField[] {
  const fields: OptionalField[] = [];
  while (r.pos < r.buf.length) {
    const type = r.u8();
    fields.push({ type, value: Buffer.from(r.bytes(r.lenenc())) });
  }
  return fields;
}

function columnNames(fields: readonly OptionalField[], count: number): string[] | null {
  const field = fields.find((f) => f.type === OPTIONAL_COLUMN_NAME);
  if (!field) return null;
  const value = new Reader(field.value);
  const names: string[] = [];
  while (value.pos < value.buf.length) names.push(value.bytes(value.lenenc()).toString('utf8'));
  return names.length === count ? names : null;
}

/** The per-column metadata of a table map: what each type needs to read its values. */
export interface ColumnMeta {
  /** The real type for STRING-encoded ENUM/SET/CHAR; else the column's type. */
  realType: number;
  /** max length (VARCHAR, STRING), length-prefix size (BLOB, JSON, GEOMETRY), pack length (ENUM/SET, FLOAT/DOUBLE). */
  length: number;
  /** DECIMAL precision. */
  precision: number;
  /** DECIMAL scale, or fractional-second digits of TIME2/DATETIME2/TIMESTAMP2. */
  decimals: number;
  /** BIT width in bits. */
  bits: number;
}

export const TYPE = {
  DECIMAL: 0,
  TINY: 1,
  SHORT: 2,
  LONG: 3,
  FLOAT: 4,
  DOUBLE: 5,
  NULL: 6,
  TIMESTAMP: 7,
  LONGLONG: 8,
  INT24: 9,
  DATE: 10,
  TIME: 11,
  DATETIME: 12,
  YEAR: 13,
  NEWDATE: 14,
  VARCHAR: 15,
  BIT: 16,
  TIMESTAMP2: 17,
  DATETIME2: 18,
  TIME2: 19,
  JSON: 245,
  NEWDECIMAL: 246,
  ENUM: 247,
  SET: 248,
  TINY_BLOB: 249,
  MEDIUM_BLOB: 250,
  LONG_BLOB: 251,
  BLOB: 252,
  VAR_STRING: 253,
  STRING: 254,
  GEOMETRY: 255,
} as const;

function readMeta(type: number, r: Reader): ColumnMeta {
  const m: ColumnMeta = { realType: type, length: 0, precision: 0, decimals: 0, bits: 0 };
  switch (type) {
    case TYPE.FLOAT:
    case TYPE.DOUBLE:
    case TYPE.BLOB:
    case TYPE.GEOMETRY:
    case TYPE.JSON:
    case TYPE.TINY_BLOB:
    case TYPE.MEDIUM_BLOB:
    case TYPE.LONG_BLOB:
      m.length = r.u8();
      break;
    case TYPE.TIMESTAMP2:
    case TYPE.DATETIME2:
    case TYPE.TIME2:
      m.decimals = r.u8();
      break;
    case TYPE.VARCHAR:
    case TYPE.VAR_STRING:
      m.length = r.u16();
      break;
    case TYPE.BIT: {
      const bits = r.u8();
      const bytes = r.u8();
      m.bits = bytes * 8 + bits;
      break;
    }
    case TYPE.NEWDECIMAL:
      m.precision = r.u8();
      m.decimals = r.u8();
      break;
    case TYPE.STRING:
    case TYPE.ENUM:
    case TYPE.SET: {
      const b0 = r.u8();
      const b1 = r.u8();
      if ((b0 & 0x30) !== 0x30) {
        // CHAR longer than 255 bytes keeps two bits of its length in the type byte.
        m.realType = b0 | 0x30;
        m.length = b1 | (((b0 & 0x30) ^ 0x30) << 4);
      } else {
        m.realType = b0;
        m.length = b1;
      }
      break;
    }
    default:
      break;
  }
  return m;
}

export function parseTableMap(body: Buffer): TableMapEvent {
  const r = new Reader(body);
  const tableId = r.uint(6);
  r.pos += 2; // flags
  const schema = r.bytes(r.u8()).toString('utf8');
  r.pos += 1;
  const table = r.bytes(r.u8()).toString('utf8');
  r.pos += 1;
  const count = r.lenenc();
  const types = [...r.bytes(count)];
  const metaLength = r.lenenc();
  const meta = new Reader(r.bytes(metaLength));
  const metas = types.map((t) => readMeta(t, meta));
  r.pos += (count + 7) >> 3; // nullability of each column
  const optional = optionalFields(r);
  return { tableId, schema, table, types, meta: metas, names: columnNames(optional, count), optional };
}

export type RowsKind = 'write' | 'update' | 'delete';

/** A rows event before its rows are decoded: they need the table's columns. */
export interface RowsEvent {
  kind: RowsKind;
  tableId: number;
  /** Flag STMT_END_F: the last rows event of its statement. */
  columnCount: number;
  /** Which columns each image holds (all of them with binlog_row_image=FULL). */
  present: boolean[];
  presentAfter: boolean[];
  /** MySQL's PARTIAL_UPDATE_ROWS_EVENT: each after image starts with its value options (row-values.ts). */
  partial: boolean;
  /** Where the row images start in `body`. */
  reader: Reader;
}

export function rowsKind(type: number): RowsKind | null {
  switch (type) {
    case EVENT.WRITE_ROWS_V1:
    case EVENT.WRITE_ROWS_V2:
      return 'write';
    case EVENT.UPDATE_ROWS_V1:
    case EVENT.UPDATE_ROWS_V2:
    case EVENT.MYSQL_PARTIAL_UPDATE_ROWS:
      return 'update';
    case EVENT.DELETE_ROWS_V1:
    case EVENT.DELETE_ROWS_V2:
      return 'delete';
    default:
      return null;
  }
}

export function bitmap(buf: Buffer, count: number): boolean[] {
  const out: boolean[] = [];
  for (let i = 0; i < count; i++) out.push((buf[i >> 3]! & (1 << (i & 7))) !== 0);
  return out;
}

export function parseRowsHead(type: number, body: Buffer): RowsEvent {
  const kind = rowsKind(type) as RowsKind;
  const r = new Reader(body);
  const tableId = r.uint(6);
  r.pos += 2; // flags
  if (type >= EVENT.WRITE_ROWS_V2) {
    // Extra data (MySQL's version 2 events), its length counting its own two bytes.
    const extra = r.u16();
    r.pos += extra - 2;
  }
  const columnCount = r.lenenc();
  const width = (columnCount + 7) >> 3;
  const present = bitmap(r.bytes(width), columnCount);
  const presentAfter = kind === 'update' ? bitmap(r.bytes(width), columnCount) : present;
  const partial = type === EVENT.MYSQL_PARTIAL_UPDATE_ROWS;
  return { kind, tableId, columnCount, present, presentAfter, partial, reader: r };
}
