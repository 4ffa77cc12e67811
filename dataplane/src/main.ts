// The worker program: one connector per process (or pod). It speaks the
// worker contract of shared/src/ports/worker-runtime.ts: configuration from
// the file SLUICE_WORKER_CONFIG names, /healthz /readyz /metrics on
// SLUICE_WORKER_PORT, and a one-line reason in
// SLUICE_TERMINATION_MESSAGE_PATH before a fatal exit. A connector type
// without an engine ends at once with "not supported by this version": the
// connector shows `error` with that message, never a pretend `live`.
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { publishesToPlatformStream, type WorkerConfig } from '@sluice/shared/catalog';
import { MetricsRegistry, WORKER_METRICS } from '@sluice/shared/metrics';
import type { WorkerContext } from './engine.js';
import { engineFor } from './engines.js';
import { ensurePlatformTopics, topicPartitions } from './systems/kafka/platform-topics.js';

const env = process.env;
const port = Number(env.SLUICE_WORKER_PORT ?? 8081);
const terminationPath = env.SLUICE_TERMINATION_MESSAGE_PATH ?? '/dev/termination-log';

function log(level: 'info' | 'warn' | 'error', msg: string, fields: Record<string, unknown> = {}): void {
  process.stdout.write(
    `${JSON.stringify({ time: new Date().toISOString(), level, worker: env.SLUICE_WORKER_ID, instance: env.SLUICE_WORKER_INSTANCE, msg, ...fields })}\n`,
  );
}

const metrics = new MetricsRegistry();
const readyGauge = metrics.gauge('sluice_worker_ready', '1 when connected and consuming');
readyGauge.set({}, 0);
// The monitoring collector tells a restarted worker (counters from zero) from one it already read.
metrics
  .gauge(WORKER_METRICS.startTime, 'When this worker process started (Unix seconds)')
  .set({}, Date.now() / 1000);
const context: WorkerContext = { metrics, log };

function die(reason: string, code: number): never {
  log('error', reason);
  try {
    writeFileSync(terminationPath, reason);
  } catch {
    // No writable termination path (a local run): the log line carries it.
  }
  process.exit(code);
}

// An error nothing caught still leaves the worker's own line for its status
// (Node's default would print a stack and exit without a termination message).
process.on('uncaughtException', (error) => die(`uncaught error: ${error.message}`, 1));
process.on('unhandledRejection', (reason) =>
  die(`unhandled rejection: ${reason instanceof Error ? reason.message : String(reason)}`, 1),
);

let ready = false;
const server = createServer((req, res) => {
  if (req.url === '/healthz') return void res.writeHead(200).end('ok');
  if (req.url === '/readyz') return void res.writeHead(ready ? 200 : 503).end(ready ? 'ready' : 'not ready');
  if (req.url === '/metrics') {
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
    return void res.end(metrics.render());
  }
  res.writeHead(404).end();
});

async function main(): Promise<void> {
  const path = env.SLUICE_WORKER_CONFIG;
  if (!path) die('SLUICE_WORKER_CONFIG is not set', 2);
  let config: WorkerConfig;
  try {
    config = JSON.parse(readFileSync(path, 'utf8')) as WorkerConfig;
  } catch {
    die(`cannot read the worker configuration at ${path}`, 2);
  }
  await new Promise<void>((resolve) => server.listen(port, env.SLUICE_WORKER_HOST ?? '127.0.0.1', resolve));
  const engine = engineFor(config);
  if (typeof engine === 'string') die(engine, 3);
  await createStreamTopics(config);
  const ac = new AbortController();
  for (const sig of ['SIGTERM', 'SIGINT'] as const) process.once(sig, () => ac.abort());
  try {
    const { done } = await engine.start(config, ac.signal, context);
    ready = true;
    readyGauge.set({}, 1);
    log('info', `${config.role} worker of ${config.connector_id} is ready`);
    await done;
  } catch (error) {
    if (!ac.signal.aborted) die(error instanceof Error ? error.message : String(error), 1);
  }
  server.close();
  process.exit(0);
}

/**
 * A database source's data model topics, on the platform stream broker, with
 * SLUICE_TOPIC_PARTITIONS partitions (platform-topics.ts) before its engine
 * publishes. Not fatal: the producer would create them with the broker's default.
 */
async function createStreamTopics(config: WorkerConfig): Promise<void> {
  if (config.role !== 'source' || !publishesToPlatformStream(config.connector_type)) return;
  const topics = (config.datamodels ?? []).filter((d) => d.enabled).map((d) => d.topic);
  try {
    const created = await ensurePlatformTopics(topics, topicPartitions(env), `sluice-${config.connector_id}`);
    if (created.length > 0) log('info', 'created data model topics', { topics: created });
  } catch (error) {
    log('warn', "could not create the data model topics; the broker's defaults apply", {
      reason: error instanceof Error ? error.message : String(error),
    });
  }
}

void main();
