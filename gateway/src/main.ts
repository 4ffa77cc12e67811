#!/usr/bin/env node
import { ConfigError, loadConfig } from './config.js';
import { createLogger, startGateway } from './server.js';

// `make run` / `npm start`: the gateway on the configured adapters.
async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`sluice: ${err.message}`);
      process.exit(2);
    }
    throw err;
  }
  const log = createLogger(config.logLevel);
  const gateway = await startGateway(config, log);
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'Shutting down: finishing in-flight requests');
    const force = setTimeout(() => process.exit(1), 25_000);
    force.unref();
    gateway.close().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error({ err }, 'Shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((err: unknown) => {
  console.error('sluice: failed to start:', err instanceof Error ? err.message : err);
  process.exit(1);
});
