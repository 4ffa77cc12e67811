// Reading a whole topic from its first offset with the worker's Kafka client,
// as the ceilings and the client comparison do: a new consumer group, no
// commits, the worker's fetch wait.
import { Consumer, MessagesStreamFallbackModes, MessagesStreamModes } from '@platformatic/kafka';

export const openEarliestStream = async ({ brokers, topic, clientId }) => {
  const consumer = new Consumer({
    clientId,
    groupId: `${clientId}-${topic}-${Date.now()}`,
    bootstrapBrokers: brokers,
  });
  const stream = await consumer.consume({
    topics: [topic],
    mode: MessagesStreamModes.EARLIEST,
    fallbackMode: MessagesStreamFallbackModes.EARLIEST,
    autocommit: false,
    maxWaitTime: 500,
  });
  const close = async () => {
    await stream.close().catch(() => undefined);
    await consumer.close(true).catch(() => undefined);
  };
  return { stream, close };
};

/** How many messages a topic holds: the sum of its partitions' end offsets. */
export const messagesIn = async (admin, topic) => {
  const meta = await admin.metadata({ topics: [topic] });
  const partitions = meta.topics.get(topic)?.partitionsCount ?? 0;
  const listed = await admin.listOffsets({
    topics: [
      {
        name: topic,
        partitions: Array.from({ length: partitions }, (_, i) => ({ partitionIndex: i, timestamp: -1n })),
      },
    ],
  });
  return listed[0]?.partitions.reduce((s, p) => s + Number(p.offset), 0) ?? 0;
};
