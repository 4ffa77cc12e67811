// A place in a server's binary log: the file and offset of the next event
// to read, and MariaDB's GTID position (one `domain-server-sequence` per
// replication domain) when the server has one. The GTID position is what a
// restart resumes from on MariaDB (it survives binary log rotation and a
// failover to a server holding the same transactions); file and offset
// otherwise.

export interface BinlogPosition {
  file: string;
  offset: number;
  /** MariaDB's GTID position (`0-1-58,1-2-7`), or '' when the server has none. */
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

/** As events carry it (`source.position`): the GTID position when there is one, else `file:offset`. */
export function formatPosition(p: BinlogPosition): string {
  return p.gtid !== '' ? p.gtid : `${p.file}:${p.offset}`;
}

export function samePosition(a: BinlogPosition, b: BinlogPosition): boolean {
  return a.file === b.file && a.offset === b.offset && a.gtid === b.gtid;
}
