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
    // Behind a Service, a terminating pod is taken out of the endpoints while
    // it is told to stop: new connections may still reach it for a moment, so
    // it keeps serving for SLUICE_SHUTDOWN_DELAY_MS before closing its listener.
    const delay = config.shutdownDelayMs;
    log.info({ signal, delayMs: delay }, 'Shutting down: finishing in-flight requests');
    const force = setTimeout(() => process.exit(1), delay + 25_000);
    force.unref();
    new Promise((r) => setTimeout(r, delay))
      .then(() => gateway.close())
      .then(
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
