import type { GatewayContext } from '../../context.js';
import { Ticker } from '../../ticker.js';
import { unreadSources } from './monitoring.repository.js';
import { unreadBinlogStatus } from './monitoring.binlog.js';
import { unreadSlotStatus } from './monitoring.service.js';

// Measures the slots of PostgreSQL sources and the binary logs of MySQL and
// MariaDB sources no worker reads, every monitoring interval, so a paused
// pipeline's retained WAL or purge risk is current (and the operator can set
// Degraded) without anyone opening its page. Every replica may run
// it: a slot measured by one replica is fresh for the others (its
// measuredAt), so each slot is measured about once per interval; a rare
// double measurement is two read-only queries.

/** Sources measured per round at most (one at a time: each has a short deadline). */
const BATCH = 100;

export class SlotMonitor {
  private readonly ticker = new Ticker(
    () => this.tick(),
    (err) => this.ctx.log.warn({ err: (err as Error).message }, 'measuring paused replication slots failed'),
  );

  constructor(private readonly ctx: GatewayContext) {}

  /** One round; resolves once every due slot was measured. */
  async tick(): Promise<void> {
    for (const row of await unreadSources(this.ctx.db, BATCH, ['POSTGRES_SOURCE'])) {
      if (this.ticker.stopped) return;
      await unreadSlotStatus(this.ctx, row);
    }
    for (const row of await unreadSources(this.ctx.db, BATCH, ['MYSQL_SOURCE', 'MARIADB_SOURCE'])) {
      if (this.ticker.stopped) return;
      await unreadBinlogStatus(this.ctx, row);
    }
  }

  start(intervalMs: number): this {
    this.ticker.start(intervalMs, intervalMs);
    return this;
  }

  async stop(): Promise<void> {
    await this.ticker.stop();
  }
}
