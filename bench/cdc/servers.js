// What the CDC benches (run.js: PostgreSQL, mariadb.js: MariaDB) run
// against: the servers their npm scripts start, and the measured worker's
// environment.

/**
 * The test broker (SLUICE_TEST_KAFKA_BROKERS) and the database URL in
 * `urlVariable`, as the bench's npm script sets them; without either the
 * process exits, saying to run through `how`.
 */
export const benchServers = (urlVariable, how) => {
  const brokers = (process.env.SLUICE_TEST_KAFKA_BROKERS ?? '').split(',').filter(Boolean);
  const url = process.env[urlVariable];
  if (brokers.length === 0 || !url) {
    console.error(`No broker or database: run through ${how}.`);
    process.exit(1);
  }
  return { brokers, url };
};

/** The measured worker's environment: the platform broker, and `nodeOptions` (--worker-node-options) if any. */
export const workerEnv = (brokers, nodeOptions) => ({
  SLUICE_STREAM_BROKERS: brokers.join(','),
  ...(nodeOptions ? { NODE_OPTIONS: nodeOptions } : {}),
});
