// The floors of the CDC bench: the server's own logical decoding of the same
// WAL with the same plug-in (pgoutput, protocol 1, the same publication),
// with nothing published anywhere.
//   - decode: pg_logical_slot_peek_binary_changes in one SQL call (decoding in
//     a backend, no replication protocol; peeking consumes nothing, so it can
//     be repeated on the same WAL);
//   - pg_recvlogical: PostgreSQL's own client of the replication protocol
//     (the walsender decodes and streams, the client writes to /dev/null), the
//     path the worker takes minus parsing and publishing. It consumes its slot.
/* global performance -- Node 24 global */
import { timedRun } from './measure.js';

/** Seconds to decode the slot's changes up to `endLsn`, and how many pgoutput messages and bytes that made. */
export const peekDecode = async (client, { slot, publication, endLsn }) => {
  const start = performance.now();
  const { rows } = await client.query(
    `select count(*)::int as messages, coalesce(sum(length(data)), 0)::bigint as bytes
       from pg_logical_slot_peek_binary_changes($1, $2::pg_lsn, null,
            'proto_version', '1', 'publication_names', $3)`,
    [slot, endLsn, publication],
  );
  const seconds = (performance.now() - start) / 1000;
  return { seconds, messages: rows[0].messages, bytes: Number(rows[0].bytes) };
};

/**
 * Seconds for pg_recvlogical to stream the slot from its start to `endLsn`
 * (process start to exit; its own start-up is a few milliseconds).
 */
export const recvLogical = ({ databaseUrl, slot, publication, endLsn, timeoutMs = 300_000 }) =>
  timedRun(
    'pg_recvlogical',
    [
      '--dbname',
      databaseUrl,
      '--slot',
      slot,
      '--start',
      '--endpos',
      endLsn,
      '--no-loop',
      '--option',
      'proto_version=1',
      '--option',
      `publication_names=${publication}`,
      '--file',
      '/dev/null',
      '--status-interval',
      '10',
    ],
    { timeoutMs },
  );
