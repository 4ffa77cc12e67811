import { addGtid, formatGtidSet, parseGtidSet } from './gtid-set.js';

// A place in a server's binary log: the file and offset of the next event
// to read, and the GTID position when the server has one: MariaDB's (one
// `domain-server-sequence` per replication domain) or MySQL's executed GTID
// set (`uuid:1-N,…`, gtid-set.ts). The GTID position is what a restart
// resumes from (it survives binary log rotation and a failover to a server
// holding the same transactions); file and offset otherwise.

export interface BinlogPosition {
  file: string;
  offset: number;
  /** MariaDB's GTID position (`0-1-58,1-2-7`), MySQL's executed GTID set (`3e11fa47-…:1-58`), or '' when there is none. */
  gtid: string;
}

/** The GTID position with one domain's last transaction replaced. */
export function advanceGtid(gtid: string, domain: number, serverId: number, sequence: bigint): string {
  const byDomain = new Map<number, string>();
  for (const part of gtid.split(',').filter(Boolean)) byDomain.set(Number(part.split('-')[0]), part);
  byDomain.set(domain, `${domain}-${serverId}-${sequence}`);
  return [...byDomain.entries()]
    .sort(([a], [b]) => a - b)
    .map(([, v]) => v)
    .join(',');
}

/** MySQL's executed GTID set with the transaction `uuid:gno` added. */
export function advanceMysqlGtid(gtid: string, uuid: string, gno: bigint): string {
  return formatGtidSet(addGtid(parseGtidSet(gtid), uuid, gno));
}

/** As events carry it (`source.position`): the GTID position when there is one, else `file:offset`. */
export function formatPosition(p: BinlogPosition): string {
  return p.gtid !== '' ? p.gtid : `${p.file}:${p.offset}`;
}

/** The position alone, without what a record carries beside it (what monitoring and messages use). */
export const positionOf = (p: BinlogPosition): BinlogPosition => ({
  file: p.file,
  offset: p.offset,
  gtid: p.gtid,
});

export function samePosition(a: BinlogPosition, b: BinlogPosition): boolean {
  return a.file === b.file && a.offset === b.offset && a.gtid === b.gtid;
}
