import type { ChangeEvent } from '../src/contracts.js';
import { workerOutboundPolicy } from '../src/outbound.js';
import { startMysqlCdc } from '../src/sources/mysql-cdc/capture.js';
import type { MysqlSourceSettings } from '../src/sources/mysql-cdc/contract.js';
import type { BinlogPosition } from '../src/sources/mysql-cdc/position.js';
import { positionOfRecord, positionRecordText } from '../src/sources/mysql-cdc/position-store.js';
import { positionOf } from '../src/sources/mysql-cdc/position.js';
import { mariadbSettings } from './mariadb-numbered.js';

// The MariaDB capture run in the test's own process, without a broker: its
// events collected in order and its position kept in memory as the text of
// the record the worker keeps on its position topic, so a test can stop it
// and start it again from where it was.

export interface InProcessCapture {
  events: ChangeEvent[];
  /** The position recorded last; null before the snapshot completed. */
  position(): BinlogPosition | null;
  /** Starts the capture (again); `done` settles when it stops. */
  start(): Promise<{ abort: AbortController; done: Promise<void> }>;
}

export function inProcessCapture(database: string, table: string): InProcessCapture {
  const events: ChangeEvent[] = [];
  let recorded: string | null = null;
  return {
    events,
    position: () => (recorded === null ? null : positionOf(positionOfRecord(recorded))),
    start: async () => {
      const abort = new AbortController();
      const started = await startMysqlCdc(
        mariadbSettings(database) as MysqlSourceSettings,
        {
          engine: 'MariaDB',
          connectorId: `in_process_${database}`,
          tables: [{ entry: `${database}.${table}`, datamodelId: 'dm' }],
          onEvent: async (e) => void events.push(e),
          flush: async () => undefined,
          loadPosition: async () => (recorded === null ? null : positionOfRecord(recorded)),
          savePosition: async (p) => void (recorded = positionRecordText(p)),
          policy: workerOutboundPolicy(),
        },
        abort.signal,
      );
      return { abort, done: started.done };
    },
  };
}
