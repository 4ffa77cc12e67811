import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort } from '@sluice/shared/net';
import {
  Admin,
  Consumer,
  MessagesStreamFallbackModes,
  MessagesStreamModes,
  Producer,
  stringSerializers,
  type Message,
} from '@platformatic/kafka';

// What the data-plane tests share: the built worker program run as a real
// child process, and plain reads and writes of topics on the test broker.

/** The built worker program (`npm run build`; `make test` builds first). */
export const WORKER_PROGRAM = resolve(import.meta.dirname, '../../dataplane/dist/main.js');

export function assertWorkerBuilt(): void {
  if (!existsSync(WORKER_PROGRAM)) throw new Error(`${WORKER_PROGRAM} is missing: run npm run build first`);
}

export { freePort };

export interface RunningWorker {
  child: ChildProcess;
  port: number;
  /** Everything the worker wrote to stdout and stderr so far. */
  output(): string;
  terminationMessage(): string | undefined;
  exited: Promise<number | null>;
  metrics(): Promise<string>;
}

/** Why the worker `what` ended, once it has (its termination message, else its last output); undefined while it runs. */
export function exitedEarly(w: RunningWorker, what: string): string | undefined {
  return w.child.exitCode !== null || w.child.signalCode !== null
    ? `${what} exited: ${w.terminationMessage() ?? w.output().slice(-2000)}`
    : undefined;
}

/** Starts the worker program with `config` as its configuration file. */
export async function startWorker(config: unknown, env: Record<string, string> = {}): Promise<RunningWorker> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-worker-'));
  const configPath = join(dir, 'config.json');
  const terminationPath = join(dir, 'termination-message');
  writeFileSync(configPath, JSON.stringify(config), { mode: 0o600 });
  const port = await freePort();
  const child = spawn(process.execPath, [WORKER_PROGRAM], {
    env: {
      PATH: process.env.PATH ?? '',
      SLUICE_WORKER_ID: 'test/worker',
      SLUICE_WORKER_CONFIG: configPath,
      SLUICE_WORKER_PORT: String(port),
      SLUICE_TERMINATION_MESSAGE_PATH: terminationPath,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr?.on('data', (b: Buffer) => (out += b.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return {
    child,
    port,
    output: () => out,
    terminationMessage: () => {
      try {
        return readFileSync(terminationPath, 'utf8');
      } catch {
        return undefined;
      }
    },
    exited,
    metrics: async () => (await fetch(`http://127.0.0.1:${port}/metrics`)).text(),
  };
}

/** Resolves once /readyz answers 200; rejects if the worker exits first or after `ms`. */
export async function waitReady(w: RunningWorker, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  let exited = false;
  void w.exited.then(() => (exited = true));
  while (Date.now() < deadline) {
    if (exited) throw new Error(`the worker exited: ${w.terminationMessage() ?? w.output()}`);
    try {
      const res = await fetch(`http://127.0.0.1:${w.port}/readyz`);
      if (res.status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the worker was not ready after ${ms} ms: ${w.output()}`);
}

export async function stopWorker(w: RunningWorker, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill(signal);
  await w.exited;
}

/**
 * The tests' producer of source messages. Idempotent: without it the client
 * may resend a whole produce request when one partition of it failed, which
 * duplicates the source itself (docs/testing-kafka.md) and would be counted
 * against the worker.
 */
export function newProducer(brokers: string[]): Producer<string, string, string, string> {
  return new Producer({
    clientId: 'sluice-test-producer',
    bootstrapBrokers: brokers,
    serializers: stringSerializers,
    idempotent: true,
    acks: -1,
  });
}

/** Sum of the end offsets of a topic's partitions: how many messages it holds (nothing is deleted here). */
export async function topicSize(admin: Admin, topic: string): Promise<number> {
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
}

/** Creates `topic` on the broker (one replica). */
export async function createTopic(brokers: string[], topic: string, partitions: number): Promise<void> {
  const admin = new Admin({ clientId: 'sluice-test-admin', bootstrapBrokers: brokers });
  try {
    await admin.createTopics({ topics: [topic], partitions, replicas: 1 });
  } finally {
    await admin.close();
  }
}

/** The partitions of `topic` each member of consumer group `groupId` holds now, one sorted list per member. */
export async function groupAssignments(
  brokers: string[],
  groupId: string,
  topic: string,
): Promise<number[][]> {
  const admin = new Admin({ clientId: 'sluice-test-admin', bootstrapBrokers: brokers });
  try {
    const group = (await admin.describeGroups({ groups: [groupId] })).get(groupId);
    return [...(group?.members.values() ?? [])].map((m) =>
      [...(m.assignments?.get(topic)?.partitions ?? [])].sort((a, b) => a - b),
    );
  } finally {
    await admin.close();
  }
}

/** Partitions of `topic` on the broker (0 when it does not exist). */
export async function partitionCount(brokers: string[], topic: string): Promise<number> {
  const admin = new Admin({ clientId: 'sluice-test-admin', bootstrapBrokers: brokers });
  try {
    if (!(await admin.listTopics()).includes(topic)) return 0;
    return (await admin.metadata({ topics: [topic] })).topics.get(topic)?.partitionsCount ?? 0;
  } finally {
    await admin.close();
  }
}

export async function topicExists(admin: Admin, topic: string): Promise<boolean> {
  return (await admin.listTopics()).includes(topic);
}

export type TextMessage = Message<string, string, string, string>;

/** Every message of a topic, read from the beginning without committing; fails after `ms`. */
export async function readTopic(
  brokers: string[],
  admin: Admin,
  topic: string,
  ms = 30_000,
): Promise<TextMessage[]> {
  const size = (await topicExists(admin, topic)) ? await topicSize(admin, topic) : 0;
  if (size === 0) return [];
  const consumer = new Consumer<string, string, string, string>({
    clientId: 'sluice-test-reader',
    groupId: `sluice-test-reader-${Math.random().toString(36).slice(2)}`,
    bootstrapBrokers: brokers,
    deserializers: {
      key: (b?: Buffer) => b?.toString('utf8') as string,
      value: (b?: Buffer) => b?.toString('utf8') as string,
      headerKey: (b?: Buffer) => b?.toString('utf8') as string,
      headerValue: (b?: Buffer) => b?.toString('utf8') as string,
    },
  });
  const stream = await consumer.consume({
    topics: [topic],
    mode: MessagesStreamModes.EARLIEST,
    fallbackMode: MessagesStreamFallbackModes.EARLIEST,
    autocommit: false,
    maxWaitTime: 200,
  });
  const out: TextMessage[] = [];
  try {
    await new Promise<void>((res, rej) => {
      const timer = setTimeout(
        () => rej(new Error(`read ${out.length} of ${size} messages of ${topic}`)),
        ms,
      );
      stream.on('data', (m: TextMessage) => {
        out.push(m);
        if (out.length >= size) {
          clearTimeout(timer);
          res();
        }
      });
      stream.once('error', (e: Error) => {
        clearTimeout(timer);
        rej(e);
      });
    });
  } finally {
    await stream.close().catch(() => undefined);
    await consumer.close(true).catch(() => undefined);
  }
  return out;
}

/**
 * Reads the first message of `topic` as a member of `groupId` and commits it,
 * as a target worker of that group does: the group then has offsets on it.
 */
export async function readOneAsGroup(brokers: string[], groupId: string, topic: string): Promise<void> {
  const consumer = new Consumer<Buffer, Buffer, Buffer, Buffer>({
    clientId: 'sluice-test-group-reader',
    groupId,
    bootstrapBrokers: brokers,
  });
  try {
    const stream = await consumer.consume({
      topics: [topic],
      mode: MessagesStreamModes.COMMITTED,
      fallbackMode: MessagesStreamFallbackModes.EARLIEST,
      autocommit: false,
      maxWaitTime: 200,
    });
    try {
      const first = await new Promise<Message<Buffer, Buffer, Buffer, Buffer>>((res, rej) => {
        const timer = setTimeout(() => rej(new Error(`no message on ${topic} for ${groupId}`)), 30_000);
        stream.once('data', (m: Message<Buffer, Buffer, Buffer, Buffer>) => {
          clearTimeout(timer);
          res(m);
        });
        stream.once('error', (e: Error) => {
          clearTimeout(timer);
          rej(e);
        });
      });
      await first.commit();
    } finally {
      await stream.close().catch(() => undefined);
    }
  } finally {
    await consumer.close(true).catch(() => undefined);
  }
}

/** Polls `read` until `test` holds; fails with the last value after `ms`. */
export async function eventually<T>(
  read: () => Promise<T>,
  test: (v: T) => boolean,
  ms = 60_000,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + ms;
  let last = await read();
  while (!test(last)) {
    if (Date.now() > deadline) throw new Error(`still ${JSON.stringify(last)} after ${ms} ms`);
    await new Promise((r) => setTimeout(r, everyMs));
    last = await read();
  }
  return last;
}
