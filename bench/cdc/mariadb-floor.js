// The floor of the MariaDB CDC bench: MariaDB's own client of the binary log
// reading the same transactions from the server as a replica does
// (`mariadb-binlog --read-from-remote-server`, the COM_BINLOG_DUMP the worker
// sends), doing nothing with them:
//   - raw: `--raw` writes the events as received; its output file is a
//     symbolic link to /dev/null. Raw mode reads to the end of the last log
//     named (it ignores --stop-position), which is the end of the measured
//     transactions: nothing else writes to the bench's server meanwhile;
//   - text: without `--raw` it also decodes every event into the SQL text of
//     a binary log dump (rows as base64 BINLOG statements) up to the stop
//     position, written to /dev/null.
// Each is timed from the process start to its exit.
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { timedRun } from './measure.js';

/**
 * Seconds for mariadb-binlog to read the binary log from `from` ({file,
 * offset}) through the logs `files` (the first is from.file), to `to.offset`
 * of the last: `{ raw, text }`.
 */
export const readBinlog = async ({ url, files, from, to, timeoutMs = 300_000 }) => {
  const u = new URL(url);
  const connection = [
    '--no-defaults',
    '--read-from-remote-server',
    `--host=${u.hostname}`,
    `--port=${u.port || 3306}`,
    `--user=${decodeURIComponent(u.username)}`,
    `--start-position=${from.offset}`,
  ];
  // The password through the environment, not the process list.
  const env = { PATH: process.env.PATH ?? '', MYSQL_PWD: decodeURIComponent(u.password) };
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-binlog-'));
  try {
    for (const f of files) symlinkSync('/dev/null', join(dir, f));
    const raw = await timedRun(
      'mariadb-binlog',
      [...connection, '--raw', `--result-file=${dir}/`, ...files],
      { env, timeoutMs },
    );
    const text = await timedRun(
      'mariadb-binlog',
      [...connection, `--stop-position=${to.offset}`, '--result-file=/dev/null', ...files],
      { env, timeoutMs },
    );
    return { raw: raw.seconds, text: text.seconds };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
};
