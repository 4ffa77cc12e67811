import { decodeDecimal } from './decimal.js';

// MySQL's binary JSON (the JSON column type 245 of MySQL 5.7+ and 8.x, as
// the binary log carries it), decoded to the JSON value the server's own
// text form (`SELECT col`) gives, so that the stream and the snapshot (which
// parses that text) agree. The format is sql/json_binary.h of the MySQL
// server: a type byte, then the value; objects and arrays in a small (2-byte
// offsets and sizes) or large (4-byte) form, their values either inlined in
// their entry (literals, 16-bit integers; 32-bit ones in the large form) or
// at an offset from the container's start; strings with a variable-length
// length (7 bits a byte); "opaque" values carrying a MySQL field type
// (DECIMAL, the temporal types, anything else as the server prints it:
// `base64:type<N>:<bytes>`).

export class MysqlJsonError extends Error {
  override readonly name = 'MysqlJsonError';
}

const JSONB = {
  SMALL_OBJECT: 0x00,
  LARGE_OBJECT: 0x01,
  SMALL_ARRAY: 0x02,
  LARGE_ARRAY: 0x03,
  LITERAL: 0x04,
  INT16: 0x05,
  UINT16: 0x06,
  INT32: 0x07,
  UINT32: 0x08,
  INT64: 0x09,
  UINT64: 0x0a,
  DOUBLE: 0x0b,
  STRING: 0x0c,
  OPAQUE: 0x0f,
} as const;

/** MySQL field types an opaque value names. */
const FIELD = { TIMESTAMP: 7, DATE: 10, TIME: 11, DATETIME: 12, NEWDECIMAL: 246 } as const;

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

function need(buf: Buffer, pos: number, bytes: number): void {
  if (pos < 0 || pos + bytes > buf.length) {
    throw new MysqlJsonError(`binary JSON value ends early (${bytes} bytes at ${pos} of ${buf.length})`);
  }
}

/** A JSON number from a 64-bit integer: exact within ±2^53, else the nearest double (as JSON.parse of the server's text gives it). */
const int64 = (v: bigint) => Number(v);

/** Numbers by type: their size and how they are read (little-endian). */
const NUMBERS: Record<number, [bytes: number, read: (buf: Buffer, pos: number) => number]> = {
  [JSONB.INT16]: [2, (b, p) => b.readInt16LE(p)],
  [JSONB.UINT16]: [2, (b, p) => b.readUInt16LE(p)],
  [JSONB.INT32]: [4, (b, p) => b.readInt32LE(p)],
  [JSONB.UINT32]: [4, (b, p) => b.readUInt32LE(p)],
  [JSONB.INT64]: [8, (b, p) => int64(b.readBigInt64LE(p))],
  [JSONB.UINT64]: [8, (b, p) => int64(b.readBigUInt64LE(p))],
  [JSONB.DOUBLE]: [8, (b, p) => b.readDoubleLE(p)],
};

/** The variable-length length of strings and opaque values: 7 bits a byte, low bits first, the high bit meaning more. */
function varLength(buf: Buffer, pos: number): [length: number, next: number] {
  let length = 0;
  for (let i = 0; i < 5; i++) {
    need(buf, pos + i, 1);
    const b = buf[pos + i]!;
    length += (b & 0x7f) * 2 ** (7 * i);
    if ((b & 0x80) === 0) return [length, pos + i + 1];
  }
  throw new MysqlJsonError('binary JSON length longer than 5 bytes');
}

/** A packed temporal value (my_time.h, TIME_to_longlong_*_packed): the integral part above 24 bits of microseconds. */
function packedTemporal(fieldType: number, data: Buffer): string {
  need(data, 0, 8);
  const packed = data.readBigInt64LE(0);
  const negative = packed < 0n;
  const abs = negative ? -packed : packed;
  const micros = Number(abs & 0xffffffn);
  const integral = Number(abs >> 24n);
  const fraction = '.' + pad(micros, 6);
  if (fieldType === FIELD.TIME) {
    const hms = integral % 2 ** 24;
    const hour = Math.floor(hms / 4096) % 1024;
    return `${negative ? '-' : ''}${pad(hour)}:${pad((hms >> 6) & 63)}:${pad(hms & 63)}${fraction}`;
  }
  const ymd = Math.floor(integral / 2 ** 17);
  const hms = integral % 2 ** 17;
  const ym = Math.floor(ymd / 32);
  const date = `${pad(Math.floor(ym / 13), 4)}-${pad(ym % 13)}-${pad(ymd % 32)}`;
  if (fieldType === FIELD.DATE) return date;
  return `${date} ${pad(hms >> 12)}:${pad((hms >> 6) & 63)}:${pad(hms & 63)}${fraction}`;
}

function opaque(fieldType: number, data: Buffer): unknown {
  switch (fieldType) {
    case FIELD.NEWDECIMAL: {
      // Precision and scale, then the binary DECIMAL; a JSON number as the server prints it.
      need(data, 0, 2);
      return Number(decodeDecimal(data.subarray(2), data[0]!, data[1]!));
    }
    case FIELD.DATE:
    case FIELD.TIME:
    case FIELD.DATETIME:
    case FIELD.TIMESTAMP:
      return packedTemporal(fieldType, data);
    default:
      return `base64:type${fieldType}:${data.toString('base64')}`;
  }
}

/** Whether a container entry holds the value itself rather than its offset. */
function inlined(type: number, large: boolean): boolean {
  switch (type) {
    case JSONB.LITERAL:
    case JSONB.INT16:
    case JSONB.UINT16:
      return true;
    case JSONB.INT32:
    case JSONB.UINT32:
      return large;
    default:
      return false;
  }
}

function container(buf: Buffer, start: number, large: boolean, object: boolean): unknown {
  const w = large ? 4 : 2;
  const read = (pos: number) => {
    need(buf, pos, w);
    return buf.readUIntLE(pos, w);
  };
  const count = read(start);
  const size = read(start + w);
  need(buf, start, size);
  const keyEntries = start + 2 * w;
  const valueEntries = keyEntries + (object ? count * (w + 2) : 0);
  const out: unknown[] = [];
  const entries: [string, unknown][] = [];
  for (let i = 0; i < count; i++) {
    const entry = valueEntries + i * (1 + w);
    need(buf, entry, 1 + w);
    const type = buf[entry]!;
    const v = inlined(type, large) ? value(type, buf, entry + 1) : value(type, buf, start + read(entry + 1));
    if (!object) {
      out.push(v);
      continue;
    }
    const keyEntry = keyEntries + i * (w + 2);
    const keyOffset = read(keyEntry);
    need(buf, keyEntry + w, 2);
    const keyLength = buf.readUInt16LE(keyEntry + w);
    need(buf, start + keyOffset, keyLength);
    entries.push([buf.toString('utf8', start + keyOffset, start + keyOffset + keyLength), v]);
  }
  // Keys as data, never as the object's prototype (a key "__proto__" is a key like any other).
  if (object) return Object.fromEntries(entries);
  return out;
}

function value(type: number, buf: Buffer, pos: number): unknown {
  switch (type) {
    case JSONB.SMALL_OBJECT:
    case JSONB.LARGE_OBJECT:
      return container(buf, pos, type === JSONB.LARGE_OBJECT, true);
    case JSONB.SMALL_ARRAY:
    case JSONB.LARGE_ARRAY:
      return container(buf, pos, type === JSONB.LARGE_ARRAY, false);
    case JSONB.LITERAL:
      need(buf, pos, 1);
      switch (buf[pos]) {
        case 0:
          return null;
        case 1:
          return true;
        case 2:
          return false;
        default:
          throw new MysqlJsonError(`binary JSON literal ${buf[pos]} is not null, true or false`);
      }
    case JSONB.INT16:
    case JSONB.UINT16:
    case JSONB.INT32:
    case JSONB.UINT32:
    case JSONB.INT64:
    case JSONB.UINT64:
    case JSONB.DOUBLE: {
      const [bytes, read] = NUMBERS[type]!;
      need(buf, pos, bytes);
      return read(buf, pos);
    }
    case JSONB.STRING: {
      const [length, at] = varLength(buf, pos);
      need(buf, at, length);
      return buf.toString('utf8', at, at + length);
    }
    case JSONB.OPAQUE: {
      need(buf, pos, 1);
      const [length, at] = varLength(buf, pos + 1);
      need(buf, at, length);
      return opaque(buf[pos]!, buf.subarray(at, at + length));
    }
    default:
      throw new MysqlJsonError(`binary JSON type ${type} is not one MySQL writes`);
  }
}

/** The JSON value of a binary JSON document; an empty one is JSON null (as the server reads it). */
export function decodeMysqlJson(buf: Buffer): unknown {
  if (buf.length === 0) return null;
  return value(buf[0]!, buf, 1);
}
