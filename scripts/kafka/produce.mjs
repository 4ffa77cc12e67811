#!/usr/bin/env node
// Sends each line of standard input as one message to a Kafka topic, for
// trying a pipeline by hand (README "A first pipeline"):
//
//   echo '{"id": 1}' | node scripts/kafka/produce.mjs 127.0.0.1:9092 orders
//
// The topic is created (one partition) when it does not exist yet. Uses the
// client the workers use (@platformatic/kafka), idempotent, acks from all.
import { createInterface } from 'node:readline';
import { Admin, Producer, stringSerializers } from '@platformatic/kafka';

const [brokers, topic] = process.argv.slice(2);
if (!brokers || !topic) {
  console.error(
    'usage: node scripts/kafka/produce.mjs host:port[,host:port…] <topic>  < messages, one per line',
  );
  process.exit(64);
}
const bootstrapBrokers = brokers.split(',');
const admin = new Admin({ clientId: 'sluice-produce', bootstrapBrokers });
const producer = new Producer({
  clientId: 'sluice-produce',
  bootstrapBrokers,
  serializers: stringSerializers,
  idempotent: true,
  acks: -1,
});
try {
  if (!(await admin.listTopics()).includes(topic)) {
    await admin.createTopics({ topics: [topic], partitions: 1, replicas: 1 });
  }
  let sent = 0;
  for await (const line of createInterface({ input: process.stdin })) {
    if (line.trim() === '') continue;
    await producer.send({ messages: [{ topic, value: line }] });
    sent += 1;
  }
  console.error(`produce: ${sent} message(s) sent to ${topic}`);
} catch (e) {
  console.error(`produce: ${e instanceof Error ? e.message : String(e)}`);
  process.exitCode = 1;
} finally {
  await producer.close();
  await admin.close();
}
