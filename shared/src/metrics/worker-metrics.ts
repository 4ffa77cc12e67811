// The worker metrics the operator's monitoring reads (docs/data-plane.md,
// "Monitoring"): each name is written by a worker and read by the operator,
// so it is defined once, here. A worker's other metrics are its own.

export const WORKER_METRICS = {
  /** When the worker process started (Unix seconds): a new value means counters started again. */
  startTime: 'sluice_worker_start_time_seconds',
  /** Change events a source published, by data model. */
  sourceMessages: 'sluice_source_messages_total',
  /** The newest source event's time, by data model. */
  sourceLastEvent: 'sluice_source_last_event_timestamp_seconds',
  /** A PostgreSQL source's replication slot: the WAL it makes the server keep. */
  slotRetainedWal: 'sluice_source_slot_retained_wal_bytes',
  /** A MySQL/MariaDB source: bytes of binary log between its read position and the server's current one. */
  binlogLagBytes: 'sluice_source_binlog_lag_bytes',
  /** A MySQL/MariaDB source: bytes of every binary log the server holds. */
  binlogHeldBytes: 'sluice_source_binlog_held_bytes',
  /** A MySQL/MariaDB source: logs held older than the one its recorded position needs, by the logs' names. */
  binlogLogsBeforeNeeded: 'sluice_source_binlog_logs_before_needed',
  /** A MySQL/MariaDB source: the server's binary log expiry (0: never). */
  binlogExpireSeconds: 'sluice_source_binlog_expire_seconds',
  /** The newest transaction read from the binary log: now minus its commit time. */
  binlogLagSeconds: 'sluice_source_binlog_lag_seconds',
  /** Change events read per second over the last measurement interval. */
  sourceEventsRate: 'sluice_source_events_per_second',
  /** Transactions read per second over the last measurement interval. */
  sourceTransactionsRate: 'sluice_source_transactions_per_second',
  /** Messages a target consumed, by subscription. */
  messagesIn: 'sluice_worker_messages_in_total',
  /** Messages a target wrote (or sent to its error table) and committed, by subscription. */
  messagesOut: 'sluice_worker_messages_out_total',
  /** Messages a target could not map or write, by subscription and kind. */
  errors: 'sluice_worker_errors_total',
  /** The newest event a target wrote, by subscription. */
  lastEvent: 'sluice_worker_last_event_timestamp_seconds',
  /** Source commit to target write, by subscription (a histogram: `_bucket` series). */
  latency: 'sluice_worker_end_to_end_latency_seconds',
} as const;
