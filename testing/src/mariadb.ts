// The MariaDB test server (scripts/with-mariadb.sh) as the tests of a
// purged binary log position need it.

/** What of a mysql2 connection this needs. */
interface Queryable {
  query(sql: string, values?: unknown[]): Promise<[unknown, unknown]>;
}

/**
 * Starts a new binary log file and purges every one before it, as
 * binlog_expire_logs_seconds does on a server left alone; resolves with the
 * file kept. The server keeps a file a replica's dump thread still reads (a
 * stopped worker's, until the server notices), so the purge is repeated for
 * up to `timeoutMs`.
 */
export async function purgeBinaryLogs(conn: Queryable, timeoutMs = 30_000): Promise<string> {
  await conn.query('flush binary logs');
  const [status] = await conn.query('show master status');
  const current = (status as { File: string }[])[0]!.File;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await conn.query('purge binary logs to ?', [current]);
    const [logs] = await conn.query('show binary logs');
    if ((logs as { Log_name: string }[])[0]?.Log_name === current) return current;
    if (Date.now() > deadline) throw new Error(`the server kept binary logs older than ${current}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}
