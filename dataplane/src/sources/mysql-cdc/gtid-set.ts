import type mysql from 'mysql2/promise';

// MySQL's GTIDs (gtid_mode=ON): each transaction is `source_uuid:gno`, and a
// server's position is the set of transactions it executed, written
// `uuid:1-57:60,uuid2:1-9` (gtid_executed). The capture keeps that set as
// its position on MySQL: it grows by each GTID event read, and a restart
// asks the server for every transaction not in it (COM_BINLOG_DUMP_GTID
// with the set encoded as below), which survives binary log rotation and a
// failover to a server holding the same transactions. Tagged GTIDs (MySQL
// 8.3+: `uuid:tag:N`) are not kept: a set holding one cannot be parsed here.

export class GtidSetError extends Error {
  override readonly name = 'GtidSetError';
}

/** Closed intervals of transaction numbers, sorted, apart (not touching). */
type Intervals = [start: bigint, end: bigint][];

/** A GTID set by source UUID (lower case, with dashes). */
export type GtidSet = Map<string, Intervals>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Parses `uuid:1-5:7,uuid2:1-3` as the server prints it (whitespace and newlines around commas allowed). */
export function parseGtidSet(text: string): GtidSet {
  const set: GtidSet = new Map();
  for (const part of text.split(',')) {
    const trimmed = part.trim();
    if (trimmed === '') continue;
    const [rawUuid, ...ranges] = trimmed.split(':');
    const uuid = rawUuid!.trim().toLowerCase();
    if (!UUID.test(uuid) || ranges.length === 0) {
      throw new GtidSetError(`"${trimmed}" is not a GTID set of source UUID and transaction ranges`);
    }
    for (const range of ranges) {
      const m = /^\s*(\d+)(?:-(\d+))?\s*$/.exec(range);
      if (!m) {
        throw new GtidSetError(
          `"${trimmed}" holds "${range}", not a range of transaction numbers (tagged GTIDs are not supported)`,
        );
      }
      const start = BigInt(m[1]!);
      const end = BigInt(m[2] ?? m[1]!);
      if (start < 1n || end < start) throw new GtidSetError(`"${trimmed}" holds the empty range "${range}"`);
      addRange(set, uuid, start, end);
    }
  }
  return set;
}

function addRange(set: GtidSet, uuid: string, start: bigint, end: bigint): void {
  const merged: Intervals = [];
  let s = start;
  let e = end;
  for (const [a, b] of set.get(uuid) ?? []) {
    // Apart from the new range (not overlapping, not adjacent): kept as is.
    if (b + 1n < s || a > e + 1n) merged.push([a, b]);
    else {
      s = a < s ? a : s;
      e = b > e ? b : e;
    }
  }
  merged.push([s, e]);
  merged.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  set.set(uuid, merged);
}

/** The set with the transaction `uuid:gno` added. */
export function addGtid(set: GtidSet, uuid: string, gno: bigint): GtidSet {
  const next: GtidSet = new Map([...set].map(([k, v]) => [k, v.map(([a, b]) => [a, b] as [bigint, bigint])]));
  addRange(next, uuid.toLowerCase(), gno, gno);
  return next;
}

/** As the server writes it: UUIDs in order, `a-b` or `a` per interval. */
export function formatGtidSet(set: GtidSet): string {
  return [...set.keys()]
    .sort()
    .map((uuid) => [uuid, ...set.get(uuid)!.map(([a, b]) => (a === b ? `${a}` : `${a}-${b}`))].join(':'))
    .join(',');
}

/** `uuid:1-3` positions are MySQL's; MariaDB's are `domain-server-sequence`. */
export function isMysqlGtidSet(text: string): boolean {
  return text.includes(':');
}

const uuidBytes = (uuid: string) => Buffer.from(uuid.replace(/-/g, ''), 'hex');

export function uuidText(bytes: Buffer): string {
  const h = bytes.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

/**
 * The set as COM_BINLOG_DUMP_GTID carries it (Gtid_set::encode): the number
 * of UUIDs, then per UUID its 16 bytes, the number of intervals and each
 * interval as start and end-plus-one, all integers 8 bytes little-endian.
 */
export function encodeGtidSet(set: GtidSet): Buffer {
  const uuids = [...set.keys()].sort();
  const parts: Buffer[] = [u64(BigInt(uuids.length))];
  for (const uuid of uuids) {
    const intervals = set.get(uuid)!;
    parts.push(uuidBytes(uuid), u64(BigInt(intervals.length)));
    for (const [a, b] of intervals) parts.push(u64(a), u64(b + 1n));
  }
  return Buffer.concat(parts);
}

function u64(v: bigint): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(v);
  return b;
}

/**
 * MySQL's executed GTID set as a position, read where the server writes
 * now: '' (file and offset) unless gtid_mode is ON (other modes log
 * transactions without a GTID, which a GTID set cannot resume past), the
 * set is empty, or it holds tagged GTIDs.
 */
export async function executedGtidPosition(conn: mysql.Connection): Promise<string> {
  const [rows] = await conn.query('SELECT @@global.gtid_mode AS mode, @@global.gtid_executed AS executed');
  const row = (rows as { mode: string | null; executed: string | null }[])[0];
  if (String(row?.mode ?? '').toUpperCase() !== 'ON') return '';
  try {
    return formatGtidSet(parseGtidSet(row?.executed ?? ''));
  } catch {
    return '';
  }
}
