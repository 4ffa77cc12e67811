import type { Consumer } from '@platformatic/kafka';

// A topic the broker does not know. The client does not answer Metadata for
// it with an empty entry: it fails the whole call with a UserError "Unknown
// topic <name>." (2.12.1, the version scripts/patch-kafka-client.mjs pins;
// dataplane/test/stream-probes.test.ts holds it to that).

type MetadataClient = Pick<Consumer<Buffer, Buffer, Buffer, Buffer>, 'metadata'>;

const UNKNOWN_TOPIC = /^Unknown topic (.+)\.$/;

/** The topic a client's "Unknown topic" error names, else undefined. */
export function unknownTopicIn(error: unknown): string | undefined {
  return error instanceof Error ? UNKNOWN_TOPIC.exec(error.message)?.[1] : undefined;
}

/** How many partitions `topic` has now, or undefined when the broker does not know it. */
export async function partitionCount(client: MetadataClient, topic: string): Promise<number | undefined> {
  try {
    const meta = await client.metadata({ topics: [topic], autocreateTopics: false, forceUpdate: true });
    return meta.topics.get(topic)?.partitionsCount;
  } catch (e) {
    if (unknownTopicIn(e) === topic) return undefined;
    throw e;
  }
}
