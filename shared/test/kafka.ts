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
