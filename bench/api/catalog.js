// Catalog part of the API benchmark (bench/api/run.js): seeds one team with
// pipelines through `POST /api/pipelines/` (flattened body: each pipeline makes
// a new Kafka source and target connector, the source's data model and one
// subscription) and measures the write path itself: a bounded number of
// creations, a few at a time, timed one by one.
import { performance } from 'node:perf_hooks';

/** The flattened PipelineCreate body of pipeline `name` in `teamId`. */
export const pipelineBody = (teamId, name) => ({
  name,
  team_id: teamId,
  source_name: `${name}-src`,
  source_type: 'KAFKA_SOURCE',
  source_config: { topic: `${name}-topic`, bootstrap_servers: 'kafka:9092' },
  target_name: `${name}-dst`,
  target_type: 'KAFKA_TARGET',
  target_config: { bootstrap_server: 'kafka:9092' },
});

/**
 * Runs `count` tasks, at most `concurrency` at a time; `task(i)` gets the
 * index. Bounded: every index is handed out exactly once.
 */
export async function pool(count, concurrency, task) {
  let next = 0;
  const worker = async () => {
    while (next < count) await task(next++);
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, count)) }, worker));
}

/**
 * Creates `count` pipelines named `${prefix}-${i}` in the team; each request
 * is timed. Returns the pipeline ids (in index order), the wall time and the
 * sorted latencies in ms. Any answer but 201 throws (through `call`).
 */
export async function createPipelines(call, base, token, teamId, { prefix, count, concurrency }) {
  const ids = new Array(count);
  const latencies = [];
  const t0 = performance.now();
  await pool(count, concurrency, async (i) => {
    const start = performance.now();
    const res = await call(base, 'POST', '/api/pipelines/', {
      token,
      json: pipelineBody(teamId, `${prefix}-${i}`),
      expect: 201,
    });
    latencies.push(performance.now() - start);
    ids[i] = res.json.id;
  });
  const wallMs = performance.now() - t0;
  latencies.sort((a, b) => a - b);
  return { ids, wallMs, latencies };
}

/** The q-quantile (0..1) of sorted values, nearest rank. */
export const quantile = (sorted, q) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] : NaN;
