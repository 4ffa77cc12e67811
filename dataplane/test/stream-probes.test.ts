import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { Admin, Consumer, type Producer } from '@platformatic/kafka';
import { describeWithKafka, testKafkaBrokers } from '@sluice/testing/kafka';
import { groupHasReadTopic } from '../src/backfill/group-read.js';
import { streamStart } from '../src/backfill/stream-start.js';
import { newProducer, readOneAsGroup } from '@sluice/testing/kafka-helpers';

// What the gateway asks a change stream before an automatic backfill
// (docs/data-plane.md "Backfills"), on the real broker: whether a
// subscription's consumer group has read it (the coordinator's answer, without
// joining the group), and how it begins, down to the topic that does not exist
// yet (the client fails Metadata for it; topic-partitions.ts).

describeWithKafka('stream probes of automatic backfills (real broker)', () => {
  const brokers = testKafkaBrokers() ?? [];
  const run = randomUUID().slice(0, 8);
  const topic = `group-read-${run}`;
  let admin: Admin;
  let producer: Producer<string, string, string, string>;
  const clients: Consumer<Buffer, Buffer, Buffer, Buffer>[] = [];
  const asGroup = (groupId: string) => {
    const client = new Consumer<Buffer, Buffer, Buffer, Buffer>({
      clientId: 'sluice-test-group-read',
      groupId,
      bootstrapBrokers: brokers,
    });
    clients.push(client);
    return client;
  };

  beforeAll(async () => {
    admin = new Admin({ clientId: 'sluice-test-admin', bootstrapBrokers: brokers });
    producer = newProducer(brokers);
    await admin.createTopics({ topics: [topic], partitions: 3, replicas: 1 });
    await producer.send({
      messages: [0, 1, 2].map((partition) => ({ topic, partition, value: `m${partition}` })),
    });
  });

  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close(true).catch(() => undefined)));
    await producer?.close();
    await admin?.close();
  });

  it('classifies a stream that does not exist yet as absent, and one without messages as empty', async () => {
    const client = asGroup(`g-start-${run}`);
    await expect(streamStart(client, `group-read-missing-${run}`)).resolves.toBe('absent');
    const empty = `group-read-empty-${run}`;
    await admin.createTopics({ topics: [empty], partitions: 2, replicas: 1 });
    await expect(streamStart(client, empty)).resolves.toBe('empty');
  });

  it('says a group has not read a topic that does not exist', async () => {
    await expect(groupHasReadTopic(asGroup(`g-none-${run}`), `group-read-missing-${run}`)).resolves.toBe(
      false,
    );
  });

  it('says no for a group that never committed, yes once it has, and only for that group', async () => {
    const group = `g-reader-${run}`;
    await expect(groupHasReadTopic(asGroup(group), topic)).resolves.toBe(false);
    await readOneAsGroup(brokers, group, topic);
    await expect(groupHasReadTopic(asGroup(group), topic)).resolves.toBe(true);
    await expect(groupHasReadTopic(asGroup(`g-other-${run}`), topic)).resolves.toBe(false);
    // Asking joined nothing: the group has no members.
    const [described] = await admin.describeGroups({ groups: [group] }).then((g) => [...g.values()]);
    expect(described?.members.size ?? 0).toBe(0);
  });
});
