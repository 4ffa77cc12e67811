import { TextDecoder } from 'node:util';
import { bitmap, type ColumnMeta, type Reader, TYPE } from './binlog-events.js';
import type { TableColumn } from './columns.js';
import { decimalSize, decodeDecimal } from './decimal.js';
import { applyJsonDiff } from './json-diff.js';
import { decodeMysqlJson, MysqlJsonError } from './mysql-json.js';
import { wkbToWkt } from './wkt.js';

// Column values as change events carry them, read from the binary log
// (binlogValue) or from the snapshot's text protocol (snapshotValue), the two
// giving the same value for the same stored datum. The mapping is the table
// of docs/data-plane-mysql.md, "Types".

export class UnsupportedValueError extends Error {
  override readonly name = 'UnsupportedValueError';
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** MySQL character sets → the WHATWG labels of TextDecoder. */
const DECODERS: Record<string, string> = {
  utf8mb4: 'utf-8',
  utf8mb3: 'utf-8',
  utf8: 'utf-8',
  ascii: 'windows-1252',
  latin1: 'windows-1252', // MySQL's latin1 is cp1252
  latin2: 'iso-8859-2',
  latin5: 'windows-1254',
  latin7: 'iso-8859-13',
  greek: 'iso-8859-7',
  hebrew: 'iso-8859-8',
  cp1250: 'windows-1250',
  cp1251: 'windows-1251',
  cp1256: 'windows-1256',
  cp1257: 'windows-1257',
  cp866: 'ibm866',
  koi8r: 'koi8-r',
  koi8u: 'koi8-u',
  ucs2: 'utf-16be',
  utf16: 'utf-16be',
  utf16le: 'utf-16le',
  gbk: 'gbk',
  gb2312: 'gbk',
  gb18030: 'gb18030',
  big5: 'big5',
  sjis: 'shift_jis',
  cp932: 'shift_jis',
  ujis: 'euc-jp',
  eucjpms: 'euc-jp',
  euckr: 'euc-kr',
};
const decoders = new Map<string, TextDecoder>();

/** Text in the column's character set as a JavaScript string. */
export function decodeText(bytes: Buffer, charset: string | null): string {
  const cs = (charset ?? 'utf8mb4').toLowerCase();
  if (cs === 'utf32') {
    let s = '';
    for (let i = 0; i + 4 <= bytes.length; i += 4) s += String.fromCodePoint(bytes.readUInt32BE(i));
    return s;
  }
  const label = DECODERS[cs];
  if (!label) throw new UnsupportedValueError(`the character set ${cs} is not supported`);
  let d = decoders.get(label);
  if (!d) decoders.set(label, (d = new TextDecoder(label)));
  return d.decode(bytes);
}

/** FLOAT is single precision: the shortest decimal that reads back as the same float32 (what the server prints). */
export function float32(value: number): number {
  if (!Number.isFinite(value) || value === 0) return value;
  for (let p = 1; p <= 9; p++) {
    const v = Number(value.toPrecision(p));
    if (Math.fround(v) === value) return v;
  }
  return value;
}

/** BIGINT: a number while it is exact, else its decimal string (as the PostgreSQL source does int8). */
function bigint(v: bigint): number | string {
  return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : String(v);
}

function bitValue(bytes: Buffer, width: number): boolean | number | string {
  let v = 0n;
  for (const b of bytes) v = (v << 8n) | BigInt(b);
  if (width === 1) return v === 1n;
  return bigint(v);
}

function setValue(mask: bigint, members: readonly string[]): string {
  return members.filter((_, i) => (mask >> BigInt(i)) & 1n).join(',');
}

function fraction(micros: number, fsp: number): string {
  return fsp > 0 ? '.' + pad(micros, 6).slice(0, fsp) : '';
}

/** fsp digits of a temporal type, read big-endian after the integral part, in microseconds. */
function readFraction(r: Reader, fsp: number): number {
  if (fsp <= 0) return 0;
  if (fsp <= 2) return r.bytes(1).readUInt8(0) * 10_000;
  if (fsp <= 4) return r.bytes(2).readUInt16BE(0) * 100;
  return r.bytes(3).readUIntBE(0, 3);
}

function readTime2(r: Reader, fsp: number): string {
  // MySQL's packed TIME: the integral part and the fraction as one
  // big-endian number offset by 2^(8·bytes − 1); negative values store the
  // fraction as its complement.
  let packed: number;
  const intpart = r.bytes(3).readUIntBE(0, 3) - 0x800000;
  if (fsp <= 0) packed = intpart * 2 ** 24;
  else if (fsp <= 2) {
    let i = intpart;
    let frac = r.bytes(1).readUInt8(0);
    if (i < 0 && frac) {
      i += 1;
      frac -= 0x100;
    }
    packed = i * 2 ** 24 + frac * 10_000;
  } else if (fsp <= 4) {
    let i = intpart;
    let frac = r.bytes(2).readUInt16BE(0);
    if (i < 0 && frac) {
      i += 1;
      frac -= 0x10000;
    }
    packed = i * 2 ** 24 + frac * 100;
  } else {
    packed = intpart * 2 ** 24 + r.bytes(3).readUIntBE(0, 3);
  }
  const negative = packed < 0;
  const abs = Math.abs(packed);
  const hms = Math.floor(abs / 2 ** 24);
  const micros = abs % 2 ** 24;
  const hour = (hms >> 12) & 0x3ff;
  const minute = (hms >> 6) & 0x3f;
  const second = hms & 0x3f;
  return `${negative ? '-' : ''}${pad(hour)}:${pad(minute)}:${pad(second)}${fraction(micros, fsp)}`;
}

function readDatetime2(r: Reader, fsp: number): string {
  const intpart = r.bytes(5).readUIntBE(0, 5) - 0x8000000000;
  const micros = readFraction(r, fsp);
  const ymd = Math.floor(intpart / 2 ** 17);
  const hms = intpart % 2 ** 17;
  const ym = Math.floor(ymd / 32);
  const date = `${pad(Math.floor(ym / 13), 4)}-${pad(ym % 13)}-${pad(ymd % 32)}`;
  const time = `${pad(hms >> 12)}:${pad((hms >> 6) & 63)}:${pad(hms & 63)}`;
  return `${date} ${time}${fraction(micros, fsp)}`;
}

const ZERO_TIMESTAMP = '0000-00-00 00:00:00';

/** TIMESTAMP: seconds since the epoch, as an ISO-8601 UTC instant. */
function timestamp(seconds: number, micros: number, fsp: number): string {
  if (seconds === 0 && micros === 0) return ZERO_TIMESTAMP + fraction(0, fsp);
  const iso = new Date(seconds * 1000).toISOString().slice(0, 19);
  return `${iso}${fraction(micros, fsp)}Z`;
}

function readDecimal(r: Reader, precision: number, scale: number): string {
  return decodeDecimal(r.bytes(decimalSize(precision, scale)), precision, scale);
}

function signed(v: number, bytes: number, unsigned: boolean): number {
  const bits = bytes * 8;
  return !unsigned && v >= 2 ** (bits - 1) ? v - 2 ** bits : v;
}

function stringValue(col: TableColumn, bytes: Buffer): unknown {
  if (col.json) return bytes.length === 0 ? null : (JSON.parse(decodeText(bytes, col.charset)) as unknown);
  if (col.charset === null) {
    if (col.binaryLength > bytes.length) {
      const padded = Buffer.alloc(col.binaryLength);
      bytes.copy(padded);
      return padded.toString('base64');
    }
    return bytes.toString('base64');
  }
  return decodeText(bytes, col.charset);
}

/** One value of a row image. */
export function binlogValue(type: number, meta: ColumnMeta, col: TableColumn, r: Reader): unknown {
  switch (type) {
    case TYPE.TINY:
      return signed(r.u8(), 1, col.unsigned);
    case TYPE.SHORT:
      return signed(r.u16(), 2, col.unsigned);
    case TYPE.INT24:
      return signed(r.uint(3), 3, col.unsigned);
    case TYPE.LONG:
      return signed(r.uint(4), 4, col.unsigned);
    case TYPE.LONGLONG: {
      const v = r.u64();
      return bigint(col.unsigned ? v : BigInt.asIntN(64, v));
    }
    case TYPE.FLOAT:
      return float32(r.bytes(4).readFloatLE(0));
    case TYPE.DOUBLE:
      return r.bytes(8).readDoubleLE(0);
    case TYPE.NEWDECIMAL:
      return readDecimal(r, meta.precision, meta.decimals);
    case TYPE.YEAR: {
      const y = r.u8();
      return y === 0 ? 0 : 1900 + y;
    }
    case TYPE.DATE: {
      const v = r.uint(3);
      return `${pad(v >> 9, 4)}-${pad((v >> 5) & 15)}-${pad(v & 31)}`;
    }
    case TYPE.TIME2:
      return readTime2(r, meta.decimals);
    case TYPE.DATETIME2:
      return readDatetime2(r, meta.decimals);
    case TYPE.TIMESTAMP2: {
      const seconds = r.bytes(4).readUInt32BE(0);
      return timestamp(seconds, readFraction(r, meta.decimals), meta.decimals);
    }
    case TYPE.TIMESTAMP:
      return timestamp(r.uint(4), 0, 0);
    case TYPE.DATETIME: {
      const v = Number(r.u64());
      const d = Math.floor(v / 1_000_000);
      const t = v % 1_000_000;
      return `${pad(Math.floor(d / 10000), 4)}-${pad(Math.floor(d / 100) % 100)}-${pad(d % 100)} ${pad(Math.floor(t / 10000))}:${pad(Math.floor(t / 100) % 100)}:${pad(t % 100)}`;
    }
    case TYPE.TIME: {
      const v = r.uint(3);
      return `${pad(Math.floor(v / 10000))}:${pad(Math.floor(v / 100) % 100)}:${pad(v % 100)}`;
    }
    case TYPE.BIT:
      return bitValue(r.bytes((meta.bits + 7) >> 3), meta.bits);
    case TYPE.VARCHAR:
    case TYPE.VAR_STRING: {
      const n = meta.length > 255 ? r.u16() : r.u8();
      return stringValue(col, r.bytes(n));
    }
    case TYPE.STRING: {
      if (meta.realType === TYPE.ENUM) {
        const i = r.uint(meta.length);
        return i === 0 ? '' : (col.members[i - 1] ?? '');
      }
      if (meta.realType === TYPE.SET) {
        const bytes = r.bytes(meta.length);
        let mask = 0n;
        for (let i = bytes.length - 1; i >= 0; i--) mask = (mask << 8n) | BigInt(bytes[i]!);
        return setValue(mask, col.members);
      }
      const n = meta.length > 255 ? r.u16() : r.u8();
      return stringValue(col, r.bytes(n));
    }
    case TYPE.BLOB:
    case TYPE.TINY_BLOB:
    case TYPE.MEDIUM_BLOB:
    case TYPE.LONG_BLOB:
      return stringValue(col, r.bytes(r.uint(meta.length)));
    case TYPE.GEOMETRY:
      return wkbToWkt(r.bytes(r.uint(meta.length)));
    case TYPE.JSON: {
      const bytes = r.bytes(r.uint(meta.length));
      try {
        return decodeMysqlJson(bytes);
      } catch (error) {
        if (!(error instanceof MysqlJsonError)) throw error;
        throw new UnsupportedValueError(
          `column ${col.name} holds binary JSON that cannot be read: ${error.message}`,
        );
      }
    }
    default:
      throw new UnsupportedValueError(
        `column ${col.name} has binary log type ${type}, which Sluice does not decode`,
      );
  }
}

/** Value option of a partial update's after image: JSON columns may be diffs against the before image. */
const PARTIAL_JSON_UPDATES = 1;

/**
 * The JSON columns logged as diffs in the after image of MySQL's partial
 * update (binlog_row_value_options=PARTIAL_JSON), from the value options
 * that start it: one bit per JSON column of the table, present in the image
 * or not.
 */
function partialJsonColumns(r: Reader, types: readonly number[]): Set<number> {
  const diffed = new Set<number>();
  if ((r.lenenc() & PARTIAL_JSON_UPDATES) === 0) return diffed;
  const json = types.flatMap((t, i) => (t === TYPE.JSON ? [i] : []));
  const bits = bitmap(r.bytes((json.length + 7) >> 3), json.length);
  json.forEach((i, n) => bits[n] && diffed.add(i));
  return diffed;
}

/**
 * A JSON column of a partial update's after image logged as a diff: its
 * operations applied to the before image's value (json-diff.ts); none means
 * the value is unchanged. A diff that cannot be applied (no before value:
 * binlog_row_image is not FULL; a path the value does not have) stops the
 * capture with what to change.
 */
function diffedJson(r: Reader, meta: ColumnMeta, col: TableColumn, before: Record<string, unknown>): unknown {
  const diff = r.bytes(r.uint(meta.length));
  if (diff.length === 0) return before[col.name] ?? null;
  try {
    if (!Object.prototype.hasOwnProperty.call(before, col.name)) {
      throw new MysqlJsonError('the before image does not hold the column (binlog_row_image is not FULL)');
    }
    return applyJsonDiff(before[col.name], diff);
  } catch (error) {
    if (!(error instanceof MysqlJsonError)) throw error;
    throw new UnsupportedValueError(
      `the server logged an update of JSON column ${col.name} as a partial diff (binlog_row_value_options=PARTIAL_JSON) ` +
        `that cannot be applied: ${error.message}. Set binlog_row_image to FULL, or binlog_row_value_options to '' ` +
        "(SET PERSIST binlog_row_value_options = '') so that updates carry whole JSON values, then take a new snapshot",
    );
  }
}

/**
 * One row image: the null bitmap of the columns present, then their values.
 * `before`: this is the after image of MySQL's partial update, whose JSON
 * diffs refer to that before image.
 */
export function readRowImage(
  r: Reader,
  present: readonly boolean[],
  types: readonly number[],
  meta: readonly ColumnMeta[],
  columns: readonly TableColumn[],
  before?: Record<string, unknown>,
): Record<string, unknown> {
  const diffed = before ? partialJsonColumns(r, types) : null;
  const count = present.filter(Boolean).length;
  // An image of no column takes no byte: a misread event would be read as such images forever.
  if (count === 0) throw new RangeError('binary log row image of no column');
  const nulls = bitmap(r.bytes((count + 7) >> 3), count);
  const row: Record<string, unknown> = {};
  let n = 0;
  for (let i = 0; i < types.length; i++) {
    if (!present[i]) continue;
    const col = columns[i]!;
    if (nulls[n++]) row[col.name] = null;
    else if (diffed?.has(i)) row[col.name] = diffedJson(r, meta[i]!, col, before!);
    else row[col.name] = binlogValue(types[i]!, meta[i]!, col, r);
  }
  return row;
}

/**
 * A value of the snapshot, from the bytes of the text protocol (the
 * connection's character set is utf8mb4, so text arrives as UTF-8; binary
 * strings, BIT and spatial values as their bytes).
 */
export function snapshotValue(col: TableColumn, raw: Buffer | null): unknown {
  if (raw === null) return null;
  const text = () => raw.toString('utf8');
  switch (col.dataType) {
    case 'tinyint':
    case 'smallint':
    case 'mediumint':
    case 'int':
    case 'integer':
    case 'year':
      return Number(text());
    case 'bigint':
      return bigint(BigInt(text()));
    case 'float':
      return float32(Math.fround(Number(text())));
    case 'double':
    case 'real':
      return Number(text());
    case 'decimal':
    case 'numeric':
      return text();
    case 'bit':
      return bitValue(raw, Number(/\((\d+)\)/.exec(col.columnType)?.[1] ?? 1));
    case 'timestamp': {
      const t = text();
      if (t.startsWith('0000-00-00')) return t;
      return `${t.slice(0, 10)}T${t.slice(11)}Z`;
    }
    case 'geometry':
    case 'point':
    case 'linestring':
    case 'polygon':
    case 'multipoint':
    case 'multilinestring':
    case 'multipolygon':
    case 'geometrycollection':
      return wkbToWkt(raw);
    case 'enum':
    case 'set':
      return text();
    default:
      if (col.json) return JSON.parse(text()) as unknown;
      if (col.charset === null && /binary|blob/.test(col.dataType)) return raw.toString('base64');
      return text();
  }
}
