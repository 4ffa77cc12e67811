import { describe, it } from '@jest/globals';

/**
 * Tests against a real Apache Kafka broker. `scripts/with-kafka.sh <command>`
 * starts a throw-away single-node KRaft broker and names it in
 * SLUICE_TEST_KAFKA_BROKERS (docs/testing-kafka.md); `make test` runs the
 * suite that way with SLUICE_REQUIRE_KAFKA=1.
 */

const SKIP_REASON = 'skipped: no Kafka broker; run under scripts/with-kafka.sh';

/** The test broker's bootstrap addresses (`host:port`), when there is one. */
export function testKafkaBrokers(): string[] | undefined {
  const list = (process.env.SLUICE_TEST_KAFKA_BROKERS ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  return list.length > 0 ? list : undefined;
}

/**
 * The secured listeners of a broker started by scripts/with-kafka.sh: SASL
 * (PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 for one user) without and with TLS,
 * and TLS alone, with the CA that signed the broker's certificate. Undefined
 * when SLUICE_TEST_KAFKA_BROKERS names a broker of someone else's (the
 * script then starts none and exports none of these).
 */
export interface TestKafkaSecurity {
  saslPlaintextBrokers: string[];
  sslBrokers: string[];
  saslSslBrokers: string[];
  username: string;
  password: string;
  caFile: string;
}

export function testKafkaSecurity(): TestKafkaSecurity | undefined {
  const e = process.env;
  const list = (v: string | undefined) => (v ?? '').split(',').filter(Boolean);
  if (
    !e.SLUICE_TEST_KAFKA_SASL_PLAINTEXT_BROKERS ||
    !e.SLUICE_TEST_KAFKA_SSL_BROKERS ||
    !e.SLUICE_TEST_KAFKA_SASL_SSL_BROKERS ||
    !e.SLUICE_TEST_KAFKA_SASL_USERNAME ||
    !e.SLUICE_TEST_KAFKA_SASL_PASSWORD ||
    !e.SLUICE_TEST_KAFKA_CA_FILE
  ) {
    return undefined;
  }
  return {
    saslPlaintextBrokers: list(e.SLUICE_TEST_KAFKA_SASL_PLAINTEXT_BROKERS),
    sslBrokers: list(e.SLUICE_TEST_KAFKA_SSL_BROKERS),
    saslSslBrokers: list(e.SLUICE_TEST_KAFKA_SASL_SSL_BROKERS),
    username: e.SLUICE_TEST_KAFKA_SASL_USERNAME,
    password: e.SLUICE_TEST_KAFKA_SASL_PASSWORD,
    caFile: e.SLUICE_TEST_KAFKA_CA_FILE,
  };
}

/**
 * `describe` for tests that need the broker. Without one, the block is
 * reported as skipped with the reason in its title, unless
 * SLUICE_REQUIRE_KAFKA=1, in which case it fails: `make test` never skips it.
 */
export function describeWithKafka(name: string, fn: () => void): void {
  if (testKafkaBrokers()) {
    describe(name, fn);
  } else if (process.env.SLUICE_REQUIRE_KAFKA === '1') {
    describe(name, () => {
      it('needs a Kafka broker', () => {
        throw new Error(
          'SLUICE_REQUIRE_KAFKA=1 but SLUICE_TEST_KAFKA_BROKERS is not set: run the tests under scripts/with-kafka.sh',
        );
      });
    });
  } else {
    // A file whose tests are all skipped gets no per-test lines in jest's
    // report: say why here too.
    console.warn(`${name}: ${SKIP_REASON}`);
    describe.skip(`${name} (${SKIP_REASON})`, fn);
  }
}

/** A broker of a test's own (see startPrivateKafka). */
export interface PrivateKafka {
  brokers: string[];
  /** Stops the broker cleanly and starts it again on the same port with the same data. */
  restart(secondsDown?: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * Starts a second, throw-away broker through scripts/with-kafka.sh, for a test
 * that must disturb its broker (restart it) without disturbing the other
 * tests' one. The wrapper runs a Node child that reports the broker and holds
 * it until its stdin closes.
 */
export async function startPrivateKafka(): Promise<PrivateKafka> {
  const { spawn, execFile } = await import('node:child_process');
  const { resolve } = await import('node:path');
  const root = resolve(import.meta.dirname, '../..');
  const env = { ...process.env };
  delete env.SLUICE_TEST_KAFKA_BROKERS;
  const hold =
    'console.log(JSON.stringify({ b: process.env.SLUICE_TEST_KAFKA_BROKERS, d: process.env.SLUICE_TEST_KAFKA_DIR }));' +
    'process.stdin.resume(); process.stdin.on("end", () => process.exit(0));';
  const child = spawn(resolve(root, 'scripts/with-kafka.sh'), [process.execPath, '-e', hold], {
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr.on('data', (b: Buffer) => (err += b.toString()));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const info = await new Promise<{ b: string; d: string }>((res, rej) => {
    let out = '';
    child.stdout.on('data', (b: Buffer) => {
      out += b.toString();
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line) res(JSON.parse(line));
    });
    void exited.then(() => rej(new Error(`scripts/with-kafka.sh ended: ${err.slice(-2000)}`)));
  });
  return {
    brokers: [info.b],
    restart: (secondsDown = 0) =>
      new Promise<void>((res, rej) =>
        execFile(
          resolve(root, 'scripts/kafka/restart-broker.sh'),
          [info.d, String(secondsDown)],
          { env },
          (e, _out, stderr) => (e ? rej(new Error(`restart-broker: ${stderr}`)) : res()),
        ),
      ),
    close: async () => {
      child.stdin.end();
      await exited;
    },
  };
}
