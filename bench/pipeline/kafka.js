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

/** What consumer group `groupId` committed on `topic`: the sum of its partitions' offsets. */
export const committedIn = async (admin, groupId, topic) => {
  const [group] = await admin.listConsumerGroupOffsets({ groups: [groupId] });
  const t = group?.topics.find((x) => x.name === topic);
  return t?.partitions.reduce((s, p) => s + Math.max(0, Number(p.committedOffset)), 0) ?? 0;
};

/** Whether consumer group `groupId` has `members` members, each holding partitions of `topic`. */
export const groupSpread = async (admin, groupId, topic, members) => {
  const group = (await admin.describeGroups({ groups: [groupId] })).get(groupId);
  const held = [...(group?.members.values() ?? [])].map((m) => m.assignments?.get(topic)?.partitions ?? []);
  return held.length === members && held.every((p) => p.length > 0);
};
