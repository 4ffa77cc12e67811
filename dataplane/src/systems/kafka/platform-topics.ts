import { Admin } from '@platformatic/kafka';
import { clientOptions, platformStream } from './connection.js';

// The data models' topics on the platform stream broker are created here,
// before a database source publishes to them, with enough partitions for
// the target workers that read them to scale into (a target's replicas
// share the partitions of one consumer group; a replica past the partition
// count idles). A producer's auto-creation would take the broker's default
// (`num.partitions`, often 1). A topic that exists is left as it is: adding
// partitions moves keys to other partitions, which would break the per-key
// order of the events already in it (docs/scaling.md).

/** Partitions of a new data model topic unless SLUICE_TOPIC_PARTITIONS says otherwise. */
export const DEFAULT_TOPIC_PARTITIONS = 6;

/** SLUICE_TOPIC_PARTITIONS: a positive integer, else the default. */
export function topicPartitions(env: NodeJS.ProcessEnv = process.env): number {
  const n = Number(env.SLUICE_TOPIC_PARTITIONS);
  return Number.isSafeInteger(n) && n > 0 ? n : DEFAULT_TOPIC_PARTITIONS;
}

/**
 * Creates those of `topics` the platform stream broker does not have, each
 * with `partitions` partitions and the broker's default replication. Returns
 * the ones it created.
 */
export async function ensurePlatformTopics(
  topics: readonly string[],
  partitions = topicPartitions(),
  clientId = 'sluice-topics',
): Promise<string[]> {
  if (topics.length === 0) return [];
  const admin = new Admin(clientOptions(platformStream(), clientId));
  try {
    const existing = new Set(await admin.listTopics());
    const missing = [...new Set(topics)].filter((t) => !existing.has(t));
    if (missing.length === 0) return [];
    await admin.createTopics({ topics: missing, partitions, replicas: -1 }).catch(async (e: unknown) => {
      // Another worker (a restart, a second source of the same data model) created them meanwhile.
      const now = new Set(await admin.listTopics());
      if (missing.some((t) => !now.has(t))) throw e;
    });
    return missing;
  } finally {
    await admin.close().catch(() => undefined);
  }
}
